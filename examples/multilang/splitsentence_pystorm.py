"""storm-starter's splitsentence.py on pystorm: ``[sentence]`` -> ``[word]`` per word.

Run by ``ShellBolt([python, "splitsentence_pystorm.py", serializer], resources=...)``;
``serializer`` is ``json`` (the default) or ``msgpack``, as the topology's
``topology.multilang.serializer``.
"""

import sys

from pystorm import Bolt


class SplitSentence(Bolt):
    """Emits each word of the sentence."""

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])  # anchored to tup (auto_anchor); tup is acked after (auto_ack)


if __name__ == "__main__":
    SplitSentence(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
