"""A pystorm spout: emits ``SPOUT_COUNT`` numbered sentences with ids, replays failures,
and appends ``ack <id>`` / ``fail <id>`` lines to the file ``SPOUT_LOG``."""

import os
import sys

from pystorm import Spout


class SentenceSpout(Spout):
    def initialize(self, conf, context):
        self.todo = [str(i) for i in range(int(os.environ.get("SPOUT_COUNT", "10")))]
        self.out = open(os.environ["SPOUT_LOG"], "a", buffering=1)

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop(0)
            self.emit([f"sentence {i} has five words"], tup_id=i)

    def ack(self, tup_id):
        self.out.write(f"ack {tup_id}\n")

    def fail(self, tup_id):
        self.out.write(f"fail {tup_id}\n")
        self.todo.append(tup_id)

    def activate(self):
        self.out.write("activate\n")

    def deactivate(self):
        self.out.write("deactivate\n")


if __name__ == "__main__":
    SentenceSpout(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
