"""A pystorm bolt: splits sentences into words (a multilang component squall did not write).

Behaviour for tests, by the sentence: ``fail ...`` is failed through the protocol,
``die ...`` writes to stderr and exits, ``hang ...`` stops answering (no heartbeats),
``report ...`` sends an error through the protocol, ``log ...`` a warning, ``metric ...``
the metric ``words``. Run with ``msgpack`` as its argument
to speak pystorm's msgpack serializer.
"""

import os
import sys
import time

from pystorm import Bolt


class SplitBolt(Bolt):
    auto_ack = False

    def initialize(self, conf, context):
        self.marker = os.environ.get("SPLIT_MARKER")
        self.delay = float(os.environ.get("SPLIT_DELAY", "0"))

    def process(self, tup):
        if self.delay:
            time.sleep(self.delay)
        sentence = tup.values[0]
        first = sentence.split()[0] if sentence.split() else ""
        if first == "fail":
            self.fail(tup)
            return
        if first == "die" and self._once("die"):
            sys.stderr.write(f"split: dying on purpose at {sentence!r}\n")
            sys.stderr.flush()
            os._exit(3)
        if first == "hang" and self._once("hang"):
            sys.stderr.write("split: hanging on purpose\n")
            sys.stderr.flush()
            time.sleep(3600)
        if first == "log":
            self.log(f"note: {sentence}", level="warn")
        if first == "metric":
            self.report_metric("words", len(sentence.split()))
        if first == "report":
            self.raise_exception(RuntimeError("reported from pystorm"), tup)
        for word in sentence.split():
            self.emit([word], anchors=[tup])
        self.ack(tup)

    def _once(self, what):
        # a marker file makes the fault happen in the first subprocess only
        if not self.marker:
            return True
        path = f"{self.marker}.{what}"
        if os.path.exists(path):
            return False
        open(path, "w").close()
        return True


if __name__ == "__main__":
    SplitBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
