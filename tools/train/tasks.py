"""Training and evaluation samples: TinyStories text and RULER-style long-context tasks, as token
ids of the tok512 vocabulary (stories260K's), with a mask of the answer tokens.

Text is split into sentences that are tokenized one by one; because SentencePiece splits on
whitespace and adds a dummy prefix, joining sentences with single spaces tokenizes to exactly the
concatenation of their ids, so a sample's ids equal what the engine produces for its text."""
import os
import random
import re
from dataclasses import dataclass

import sentencepiece as spm

ASSETS = os.environ.get("MOMENTKV_ASSETS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/assets"))
TEXT = os.path.join(ASSETS, "text/tinystories_val.txt")
TOKENIZER_MODEL = os.path.join(ASSETS, "tok512.model")
BOS = 1
VOCAB_SIZE = 512  # tok512; ids 0-2 are <unk>, <s>, </s>
ANSWER, COPY = 1, 2  # answer_mask values
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
    return f"The magic {kind} of {key} is {value}."


def question(kind, key):
    """The question ends with the same words that precede the value in the needle."""
    return f"What is the magic {kind} of {key}? The magic {kind} of {key} is"


def needle_of_many(kind, key, value):
    return f"One of the magic {KINDS[kind]} of {key} is {value}."


def question_all(kind, key):
    return f"What are all the magic {KINDS[kind]} of {key}? The magic {KINDS[kind]} of {key} are"


@dataclass
class Sample:
    ids: list                # BOS first
    answer_mask: list        # ANSWER where the id answers a question, COPY inside a repeated span, else 0


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


def heldout_corpus():
    """The held-out 10% of the shared TinyStories text, the source of every evaluation haystack."""
    return Corpus(TEXT, TOKENIZER_MODEL, "heldout")


class TaskGenerator:
    """Builds samples of a target length; `rng` alone decides everything (seeded, reproducible).

    The retrieval signal is dense on purpose: a retrieval sample hides up to one needle per 64
    tokens and asks most of them, either all after the haystack (RULER's layout) or each at a
    random later point (short distances first teach the lookup); "repeat" samples copy a span of
    the haystack further on and "random_repeat" samples repeat random-token strings, the
    cheapest ways to grow induction (copying) heads."""

    TASKS = {"text": 0.10, "repeat": 0.10, "random_repeat": 0.20, "retrieval": 0.45, "multivalue": 0.075,
             "vartrack": 0.075}

    def __init__(self, corpus: Corpus, mix=None):
        """mix: {task: weight} overriding TASKS (tasks left out are not drawn)."""
        self.corpus = corpus
        self.mix = dict(mix) if mix else dict(self.TASKS)
        unknown = set(self.mix) - set(self.TASKS)
        if unknown:
            raise ValueError(f"unknown task(s) {sorted(unknown)}; known: {sorted(self.TASKS)}")

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
        task = task or rng.choices(list(self.mix), weights=list(self.mix.values()))[0]
        if task == "text":
            _, ids = self.corpus.haystack(rng, length)
            flat = [BOS] + [t for s in ids for t in s]
            return Sample(flat[:length], [0] * length)
        return {"repeat": self.repeat, "random_repeat": self.random_repeat, "retrieval": self.retrieval, "multivalue": self.multivalue,
                "vartrack": self.variable_tracking}[task](rng, length)

    def repeat(self, rng, length):
        """Story text in which a span of 16-128 tokens reappears later; the copy is the target."""
        _, hay = self.corpus.haystack(rng, length)
        ids = [BOS] + [t for s in hay for t in s]
        span = rng.randint(16, max(16, min(128, length // 3)))
        source = rng.randrange(1, max(2, length - 2 * span))
        at = rng.randrange(source + span, max(source + span + 1, length - span))
        ids = ids[:at] + ids[source:source + span] + ids[at:]
        mask = [0] * (at + 1) + [COPY] * (span - 1) + [0] * len(ids)
        return Sample(ids[:length], mask[:length])

    def random_repeat(self, rng, length):
        """Story text with pairs of identical random-token strings (8-32 ids); only copying can
        predict a pair's second string, which is the target."""
        _, hay = self.corpus.haystack(rng, length)
        ids = [BOS] + [t for s in hay for t in s]
        mask = [0] * len(ids)
        for _ in range(rng.randint(1, max(1, length // 128))):
            span = [rng.randrange(3, VOCAB_SIZE) for _ in range(rng.randint(8, 32))]
            first, second = sorted(rng.randint(1, max(1, length - 2 * len(span))) for _ in range(2))
            ids[second:second] = span
            mask[second:second] = [0] + [COPY] * (len(span) - 1)
            ids[first:first] = span
            mask[first:first] = [0] * len(span)
        return Sample(ids[:length], mask[:length])

    def retrieval(self, rng, length):
        kind = self.random_kind(rng)
        n_needles = rng.randint(1, max(1, min(12, length // 64)))
        keys = self.random_keys(rng, n_needles)
        facts = [(k, self.random_value(rng, kind)) for k in keys]
        asked = rng.sample(range(n_needles), rng.randint((n_needles + 1) // 2, n_needles))
        statements = [(needle(kind, k, v), None) for k, v in facts]
        questions = {i: (question(kind, facts[i][0]), f" {facts[i][1]}.") for i in asked}
        if rng.random() < 0.5:  # RULER layout: every question after the haystack
            return self.assemble(rng, length, statements + [questions[i] for i in asked], len(asked))
        items = list(statements)
        for i in asked:  # each question somewhere after its needle
            after = items.index(statements[i]) + 1
            items.insert(rng.randint(after, len(items)), questions[i])
        return self.assemble(rng, length, items, 0)

    def multivalue(self, rng, length):
        kind = self.random_kind(rng)
        key = self.random_keys(rng, 1)[0]
        values = [self.random_value(rng, kind) for _ in range(rng.randint(2, 3))]
        items = [(needle_of_many(kind, key, v), None) for v in values]
        return self.assemble(rng, length, items + [(question_all(kind, key), " " + ", ".join(values) + ".")], 1)

    def variable_tracking(self, rng, length):
        names, chain, question_text = variable_chain(rng)
        items = [(statement, None) for statement in chain]
        asked = (question_text, " " + " ".join(names) + ".")
        return self.assemble(rng, length, items + [asked], 1)

    def assemble(self, rng, length, items, n_tail):
        """`items` are (text, answer) pairs in order, answer None for a plain statement. All but the
        last `n_tail` are hidden in order at random sentence boundaries of a haystack, the last
        `n_tail` follow it; answer ids are marked ANSWER; story text pads the sample to `length`.
        Items that do not fit in `length` are dropped from the end."""
        encoded = []
        for text, answer in items:
            if answer is None:
                ids = self.corpus.encode(text)
                encoded.append((ids, [0] * len(ids)))
            else:
                q_ids, full_ids = self.corpus.encode(text), self.corpus.encode(text + answer)
                assert full_ids[:len(q_ids)] == q_ids, (text, answer)
                encoded.append((full_ids, [0] * len(q_ids) + [ANSWER] * (len(full_ids) - len(q_ids))))
        while len(encoded) > 1 and sum(len(ids) for ids, _ in encoded) > length - 1:
            encoded.pop()
            n_tail = max(0, n_tail - 1)
        hidden, tail = encoded[:len(encoded) - n_tail], encoded[len(encoded) - n_tail:]
        budget = length - 1 - sum(len(ids) for ids, _ in encoded)
        _, hay = self.corpus.haystack(rng, max(budget, 1))
        while len(hay) > 1 and sum(map(len, hay)) > budget:
            hay.pop()
        pieces = [(s, [0] * len(s)) for s in hay]
        slots = sorted(rng.randint(0, len(hay)) for _ in hidden)
        for offset, (slot, item) in enumerate(zip(slots, hidden)):
            pieces.insert(slot + offset, item)
        pieces += tail
        ids = [BOS] + [t for p, _ in pieces for t in p]
        mask = [0] + [m for _, p in pieces for m in p]
        if len(ids) < length:
            _, pad = self.corpus.haystack(rng, length - len(ids))
            ids += [t for s in pad for t in s]
        return Sample(ids[:length], (mask + [0] * length)[:length])


def variable_chain(rng):
    """A variable-tracking chain: a 5-digit value assigned to the first of 3-5 random 5-letter
    names, each next name assigned the previous one. Returns (names, statements, question)."""
    value = str(rng.randrange(10_000, 100_000))
    count, names = rng.randint(3, 5), []
    while len(names) < count:
        name = "".join(rng.choice(LETTERS) for _ in range(5))
        if name not in names:
            names.append(name)
    chain = [f"VAR {names[0]} = {value}."] + [f"VAR {b} = VAR {a}." for a, b in zip(names, names[1:])]
    return names, chain, f"Find all variables that are assigned the value {value} in the text above. They are:"


def needle_prompt(corpus, rng, length, depth, n_needles, kind="number"):
    """Haystack sentences with n_needles needles (the asked one at `depth`), then the question;
    `length` tokens including BOS. Returns (text, value, ids)."""
    keys = TaskGenerator.random_keys(rng, n_needles)
    values = [TaskGenerator.random_value(rng, kind) for _ in keys]
    needle_ids = [corpus.encode(needle(kind, k, v)) for k, v in zip(keys, values)]
    q = question(kind, keys[0])
    budget = length - 1 - len(corpus.encode(q)) - sum(map(len, needle_ids))
    texts, ids = corpus.haystack(rng, budget)
    while sum(map(len, ids)) > budget:
        texts.pop(), ids.pop()
    slots = [round(depth * len(texts))] + [rng.randint(0, len(texts)) for _ in keys[1:]]
    for slot, (k, v) in sorted(zip(slots, zip(keys, values)), key=lambda s: -s[0]):
        texts.insert(slot, needle(kind, k, v))
    text = " ".join(texts + [q])
    return text, values[0], [BOS] + corpus.encode(text)
