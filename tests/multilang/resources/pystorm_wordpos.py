"""A pystorm bolt: ``[id, sentence]`` -> ``[word, id, pos]`` per word (the Spark word count's split)."""

import sys

from pystorm import Bolt


class WordPosBolt(Bolt):
    def process(self, tup):
        sid, sentence = tup.values[0], tup.values[1]
        for pos, word in enumerate(sentence.split()):
            self.emit([word, sid, pos])  # auto_anchor: anchored to tup; auto_ack acks it


if __name__ == "__main__":
    WordPosBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
