"""Training and evaluation samples: TinyStories text and RULER-style long-context tasks, as token
ids of the tok512 vocabulary (stories260K's), with a mask of the answer tokens.

Text is split into sentences that are tokenized one by one; because SentencePiece splits on
whitespace and adds a dummy prefix, joining sentences with single spaces tokenizes to exactly the
concatenation of their ids, so a sample's ids equal what the engine produces for its text."""
import random
import re
from dataclasses import dataclass

import sentencepiece as spm

BOS = 1
ADJECTIVES = """able bright brave calm clever cold cosy curly dark eager early fancy fast fierce fluffy
gentle giant golden green happy heavy hollow huge icy jolly kind large lazy little loud lucky merry
mighty muddy narrow noisy odd old orange pink plain proud purple quick quiet rapid red rough round
royal rusty sandy shiny short silent silly silver sleepy slow small smooth soft sour spicy steady
sticky strong sunny sweet tall tame tiny warm wild windy wise wooden yellow young""".split()
NOUNS = """apple badger basket beach bear bell berry bird boat bottle bridge bucket bunny cake
candle castle cat cloud cookie crab crown dog dragon drum duck eagle farm feather fish flower fox
frog garden ghost giraffe goat hat hill horse island jar kite lamp leaf lemon lion map moon mouse
nest owl panda pencil piano pirate pond pony puppy queen rabbit river robot rocket rose sheep ship
shoe snail snake spoon star stone sun swan tiger toy train tree turtle wagon whale window wolf""".split()
HEX = "0123456789abcdef"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
KINDS = {"number": "numbers", "word": "words", "code": "codes"}  # singular -> plural


def clean(text):
    return re.sub(r"\s+", " ", text).strip()


def split_sentences(text):
    return [s for s in re.split(r"(?<=[.!?\"])\s+", clean(text)) if s]


def needle(kind, key, value):
    return f"One of the special magic {KINDS[kind]} for {key} is: {value}."


def question(kind, key):
    return (f"What is the special magic {kind} for {key} mentioned in the provided text? "
            f"The special magic {kind} for {key} mentioned in the provided text is")


def question_all(kind, key):
    return (f"What are all the special magic {KINDS[kind]} for {key} mentioned in the provided text? "
            f"The special magic {KINDS[kind]} for {key} mentioned in the provided text are")


@dataclass
class Sample:
    ids: list                # BOS first
    answer_mask: list        # 1 where the id is part of an answer


class Corpus:
    """Sentences of a text file, tokenized; `split` "train" = first 90%, "heldout" = last 10%."""

    def __init__(self, text_path, model_path, split):
        self.sp = spm.SentencePieceProcessor(model_file=model_path)
        paragraphs = [p for p in open(text_path, encoding="utf-8").read().split("\n\n") if p.strip()]
        cut = int(len(paragraphs) * 0.9)
        paragraphs = paragraphs[:cut] if split == "train" else paragraphs[cut:]
        self.sentences = [s for p in paragraphs for s in split_sentences(p)]
        self.sentence_ids = self.sp.encode(self.sentences)

    def encode(self, text):
        return self.sp.encode(text)

    def haystack(self, rng, n_tokens):
        """Consecutive sentences from a random place, as (text, ids) lists, about n_tokens long."""
        i = rng.randrange(len(self.sentences))
        texts, ids, total = [], [], 0
        while total < n_tokens:
            texts.append(self.sentences[i])
            ids.append(self.sentence_ids[i])
            total += len(self.sentence_ids[i])
            i = (i + 1) % len(self.sentences)
        return texts, ids


class TaskGenerator:
    """Builds samples of a target length; `rng` alone decides everything (seeded, reproducible)."""

    TASKS = {"text": 0.10, "single": 0.25, "multikey": 0.25, "multiquery": 0.15,
             "multivalue": 0.10, "vartrack": 0.15}

    def __init__(self, corpus: Corpus):
        self.corpus = corpus

    @staticmethod
    def random_value(rng, kind):
        if kind == "number":
            return str(rng.randrange(1_000_000, 10_000_000))
        if kind == "word":
            return rng.choice(NOUNS)
        return "".join(rng.choice(HEX) for _ in range(4)) + "-" + "".join(rng.choice(HEX) for _ in range(4))

    @staticmethod
    def random_keys(rng, n):
        keys = []  # a list, not a set: a set's order depends on PYTHONHASHSEED
        while len(keys) < n:
            key = f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}"
            if key not in keys:
                keys.append(key)
        return keys

    @staticmethod
    def random_kind(rng):
        return rng.choices(["number", "word", "code"], weights=[0.7, 0.15, 0.15])[0]

    def sample(self, rng, length, task=None):
        task = task or rng.choices(list(self.TASKS), weights=list(self.TASKS.values()))[0]
        if task == "text":
            _, ids = self.corpus.haystack(rng, length)
            flat = [BOS] + [t for s in ids for t in s]
            return Sample(flat[:length], [0] * length)
        if task == "vartrack":
            return self.variable_tracking(rng, length)
        kind = self.random_kind(rng)
        n_needles = {"single": 1, "multikey": rng.randint(2, 4), "multiquery": rng.randint(2, 4),
                     "multivalue": 1}[task]
        keys = self.random_keys(rng, n_needles)
        facts = [(k, self.random_value(rng, kind)) for k in keys]
        if task == "multivalue":
            facts = [(keys[0], self.random_value(rng, kind)) for _ in range(rng.randint(2, 3))]
            asked = [(question_all(kind, keys[0]), " " + ", ".join(v for _, v in facts) + ".")]
        else:
            n_asked = rng.randint(2, n_needles) if task == "multiquery" else 1
            picked = rng.sample(range(n_needles), n_asked)
            asked = [(question(kind, facts[i][0]), f" {facts[i][1]}.") for i in picked]
        inserts = [needle(kind, k, v) for k, v in facts]
        return self.assemble(rng, length, inserts, asked)

    def variable_tracking(self, rng, length):
        value = str(rng.randrange(10_000, 100_000))
        count, names = rng.randint(3, 5), []
        while len(names) < count:
            name = "".join(rng.choice(LETTERS) for _ in range(5))
            if name not in names:
                names.append(name)
        inserts = [f"VAR {names[0]} = {value}."] + [f"VAR {b} = VAR {a}." for a, b in zip(names, names[1:])]
        asked = [(f"Find all variables that are assigned the value {value} in the text above. They are:",
                  " " + " ".join(names) + ".")]
        return self.assemble(rng, length, inserts, asked)

    def assemble(self, rng, length, inserts, asked):
        """Hides `inserts` in order at random sentence boundaries of a haystack, then appends the
        questions with their answers; pads to `length` with story text after the last answer."""
        insert_ids = [self.corpus.encode(s) for s in inserts]
        qa_ids = [(self.corpus.encode(q), self.corpus.encode(q + a)) for q, a in asked]
        tail = sum(len(full) for _, full in qa_ids)
        budget = length - 1 - tail - sum(len(i) for i in insert_ids)
        _, hay = self.corpus.haystack(rng, max(budget, 1))
        while len(hay) > 1 and sum(map(len, hay)) > budget:
            hay.pop()
        slots = sorted(rng.randint(0, len(hay)) for _ in inserts)
        pieces = list(hay)
        for offset, (slot, ids) in enumerate(zip(slots, insert_ids)):
            pieces.insert(slot + offset, ids)
        ids = [BOS] + [t for p in pieces for t in p]
        mask = [0] * len(ids)
        for (q, a), (q_ids, full_ids) in zip(asked, qa_ids):
            assert full_ids[:len(q_ids)] == q_ids, (q, a)
            mask += [0] * len(q_ids) + [1] * (len(full_ids) - len(q_ids))
            ids += full_ids
        if len(ids) < length:
            _, pad = self.corpus.haystack(rng, length - len(ids))
            ids += [t for s in pad for t in s]
        ids, mask = ids[:length], (mask + [0] * length)[:length]
        return Sample(ids, mask)
