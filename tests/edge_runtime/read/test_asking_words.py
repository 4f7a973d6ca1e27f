"""The model path's final sentence keeps the words the template's asks with (edge_runtime/read/asking_words.py)."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.read.asking_words import asking_word_change
from edge_runtime.read.english_words import word_stem
from edge_runtime.read.guard import GuardConfig, ReasoningGuard

HOSE = ("A gardener needs to buy new hose. He wants # feet of hose for every flower bed. There are # beds, and he "
        "already has # feet of hose. How many feet of hose does he need to buy?")
TREES = "Omar plants # pear trees a week in his orchard. After # weeks, how many pear trees does he have if # died?"
CAKES = ("Ann bakes # cakes, # pies and # cookies. Each cake sells for $#. If Ann sells all the baked goods, how much "
         "does she earn?")
FARM = "A farmer has # cows and # sheep. How many animals does the farmer have in all?"
BAKERY = "A bakery sells # muffins in the morning and # in the afternoon. How many muffins did the bakery sell?"
TOM = "Tom has $#. He buys # books for $# each. How much money does he have left?"
PENS = ("A pen can write # pages before it runs out. Ann has # pens; one has written # pages and the other # pages. How "
        "many more pages can both pens write before they run out?")
LOAVES = "A baker makes # loaves of bread a day. How many loaves does the baker make in # days?"


@pytest.mark.parametrize("template, question, word", [
    # a word the template asks with, dropped while the story still names it: another quantity
    (HOSE, "A gardener needs to buy new hose. He wants 2 feet of hose for every flower bed. There are 9 beds, and he "
           "already has 5 feet of hose. How many feet of hose does he need?", "buy"),
    # a verb of the story the template does not ask with, in any tense
    (TREES, "Omar plants 4 pear trees a week in his orchard. After 6 weeks, how many pear trees has he planted if 3 "
            "died?", "planted"),
    # the final sentence's condition counts as well: here it narrows the goods to some of them
    (CAKES, "Ann bakes 4 cakes, 3 pies and 9 cookies. Each cake sells for $5. If Ann sells all the pies and cookies, "
            "how much does she earn?", "baked"),
    # a condition the template's final sentence does not state narrows what it asks
    (HOSE, "A gardener needs to buy new hose. He wants 2 feet of hose for every flower bed. There are 9 beds, and he "
           "already has 5 feet of hose. By the end of spring, how many feet of hose does he need to buy?", "end"),
    # what remains, asked as all of it ("left" is a stop word elsewhere, so the content words alone miss it)
    (TOM, "Tom has $50. He buys 3 books for $7 each. How much money does he have?", "left"),
    # another time than the template's, even after a number
    ("Omar is # years old. His sister is # years older. How old is his sister?",
     "Omar is 9 years old. His sister is 4 years older. How old was his sister 5 years ago?", "ago"),
    (TOM, "Tom has $50. He buys 3 books for $7 each. How much money did he have left at first?", "first"),
    (TOM, "Tom has $50. He buys 3 books for $7 each. How much money did he have left before?", "before"),
    # each one where the template asks about them all
    (TOM, "Tom has $50. He buys 3 books for $7 each. How much money does he have left for each of them?", "each of"),
    (CAKES, "Ann bakes 4 cakes, 3 pies and 9 cookies. Each cake sells for $5. If Ann sells all the baked goods, how "
            "much does each cake earn her?", "each cake"),
    # the template's condition dropped, its words still in both stories: the question no longer asks with it
    ("A DVD can be played # times before it breaks. One has been played # times and the other # times. How many more "
     "times can both be played before they break?",
     "A DVD can be played 100 times before it breaks. One has been played 30 times and the other 40 times. How many "
     "more times can both be played?", "break"),
    # the same with the thing renamed throughout: the new name stands in for the template's name of it, not for the
    # dropped condition; "so far" is an adverb of when, as "now" is, and stands in for nothing either
    (PENS, "A marker can write 90 pages before it runs out. Ann has 2 markers; one has written 30 pages and the other "
           "25 pages. How many pages have both markers written so far?", "run"),
    (PENS, "A pen can write 90 pages before it runs out. Ann has 2 pens; one has written 30 pages and the other 25 "
           "pages. How many pages have both pens written so far?", "run"),
    # a word for what it asks that neither story names: another quantity than the template's (profit, not takings)
    (CAKES, "Ann bakes 4 cakes, 3 pies and 9 cookies. Each cake sells for $5. If Ann sells all the baked goods, how "
            "much profit does she earn?", "profit"),
    # what it asks with replaced by words of its own, more than one: another quantity (money taken in, not lost)
    ("Adam has $#. He buys rocks for $# each and sells them for $# each. If he only sells #% of them, how much money "
     "does he lose?", "Adam has $100. He buys rocks for $5 each and sells them for $7 each. If he only sells 60% of "
     "them, how much money does he take in from sales?", "lose"),
    # a kind of the thing the story names among others ("red" apples of red and green ones): a part, not all
    ("Ann picks # red apples and # green apples. How many apples does she pick?",
     "Ann picks 5 red apples and 7 green apples. How many red apples does she pick?", "red"),
    ("Ann buys a toy car for $#, a puzzle for $# and a ball for $#. How much does she spend on the car and the "
     "ball?", "Ann buys a toy car for $5, a puzzle for $7 and a ball for $3. How much does she spend on the toy car "
     "and the puzzle?", "puzzle"),
])
def test_a_final_sentence_that_asks_with_other_words_of_the_story_is_refused(template, question, word):
    refusal = asking_word_change(template, question)
    assert refusal is not None and repr(word) in refusal


@pytest.mark.parametrize("template, question", [
    # reworded around the same words
    (HOSE, "A gardener must buy some new hose. For every flower bed he wants 2 feet of hose. There are 9 beds, and 5 "
           "feet of hose are already his. How many feet of hose must he buy?"),
    # the thing asked about renamed everywhere, and a name for the pronoun
    (TREES, "Lena plants 4 apple saplings a week in her orchard. After 6 weeks, how many apple saplings does Lena "
            "have if 3 died?"),
    # renamed throughout, the template's condition kept
    (PENS, "A marker can write 90 pages before it runs out. Ann has 2 markers; one has written 30 pages and the other "
           "25 pages. How many more pages can both markers write before they run out?"),
    # a given restated after a number of the final sentence ("for 9 cookies") asks as the template does
    (CAKES, "Ann bakes 4 cakes, 3 pies and 9 cookies. Each cake sells for $5. If Ann sells all the baked goods, how "
            "much does she earn in dollars?"),
    # an adverb that says when, not what ("does he still need to buy" for "does he need to buy")
    (HOSE, "A gardener needs to buy new hose. He wants 2 feet of hose for every flower bed. There are 9 beds, and he "
           "already has 5 feet of hose. How many feet of hose does he still need to buy?"),
    (HOSE, "A gardener needs to buy new hose. He wants 2 feet of hose for every flower bed. There are 9 beds, and he "
           "already has 5 feet of hose. How many feet of hose does he need to buy overall?"),
    # the template's own condition, reworded with its words; a condition that restates a given with its number
    (CAKES, "Ann bakes 4 cakes, 3 pies and 9 cookies. Each cake sells for $5. Once Ann has sold all of the baked "
            "goods, how much does she earn?"),
    (HOSE, "A gardener needs to buy new hose. There are 9 beds, and he already has 5 feet of hose. If he wants 2 feet "
           "of hose for every flower bed, how many feet of hose does he need to buy?"),
    # a past tense for the present: the same verb
    (TREES.replace("plants", "planted").replace("does he have", "did he have"),
     "Omar plants 4 pear trees a week in his orchard. After 6 weeks, how many pear trees does he have if 3 died?"),
    # the full name the story always gives a thing the template's final sentence names shortly ("the game" of a story
    # with a board game), in the asking or in a condition
    ("Dora wants a rope that costs $#, a board game that costs $# and a ball that costs $#. She has $#. How much more "
     "money does Dora need to buy the rope, the game, and the ball?",
     "Dora wants a rope that costs $5, a board game that costs $12 and a ball that costs $3. She has $9. How much more "
     "money does Dora need to buy the rope, the board game, and the ball?"),
    ("Tara bought # packs of # canvas bags for $# each. She sold them for $# each. How much profit did she earn on her "
     "bags?", "Tara bought 3 packs of 6 canvas bags for $4 each. She sold them for $9 each. How much profit did she "
     "earn on her canvas bags?"),
    # what it asks with said again in one word, or by other words around a verb that only frames what is asked
    ("Adam has $#. He buys rocks for $# each and sells them for $# each. If he only sells #% of them, how much money "
     "does he lose?", "Adam has $100. He buys rocks for $5 each and sells them for $7 each. If he only sells 60% of "
     "them, what is his loss?"),
    ("Ed owes $#. He earns $# an hour. How many hours does he need to work?",
     "Ed owes $900. He earns $15 an hour. How many hours must he work to accumulate enough money to settle it?"),
    # a title is part of a name, and its full stop does not end the final question
    ("Mr. Josue had $# in capital. A bank lent him $#. If he had $# in capital, how much capital does he have now?",
     "Mr. Tanaka had $1500 in capital. A bank lent him $19500. If Mr. Tanaka had $1500 in capital, how much capital "
     "does Mr. Tanaka have now?"),
])
def test_a_final_sentence_reworded_or_renamed_throughout_passes(template, question):
    assert asking_word_change(template, question) is None


@pytest.mark.parametrize("template, story, final", [
    # the subject the template asks about, as a pronoun, or left out by a passive or "there are"
    (FARM, "A farmer has 8 cows and 15 sheep. ", "How many animals does he have in all?"),
    (FARM, "A farmer has 8 cows and 15 sheep. ", "How many animals are there in total?"),
    (FARM, "A farmer has 8 cows and 15 sheep. ", "How many animals does the farmer have each day?"),  # a rate, not one
    (BAKERY, "A bakery sells 40 muffins in the morning and 25 in the afternoon. ", "How many muffins were sold?"),
    (BAKERY, "A bakery sells 40 muffins in the morning and 25 in the afternoon. ", "How many muffins did it sell?"),
    # a lead-in before the question word is not a condition; a unit to answer in is the unit check's
    (TOM, "Tom has $50. He buys 3 books for $7 each. ", "Tell me how much money he has left."),
    (TOM, "Tom has $50. He buys 3 books for $7 each. ", "How much money does he have left, in dollars?"),
    (TOM, "Tom has $50. He buys 3 books for $7 each. ", "How much money does he still have?"),
    (TOM, "Tom has $50. He buys 3 books for $7 each. ", "How much money remains?"),
    # a given restated in words: its number word ends what the question asks with
    (LOAVES, "A baker makes 12 loaves of bread a day. ", "How many loaves does the baker make in five days?"),
    # "each one" is a pronoun for the thing; a noun in the place of the template's pronoun names it
    ("Nina has # candies. She shares them equally among # friends. How many candies does each friend get?",
     "Nina has 24 candies. She shares them equally among 6 friends. ", "How many candies does each one get?"),
    ("A printer prints # pages a minute. How many pages does it print in # minutes?",
     "A printer prints 30 pages a minute. ", "How many pages will the printer print in 12 minutes?"),
    # "given" as a verb, not a condition; an instruction's verb is a lead
    ("Ann has # apples. She gives # apples to each of # friends. How many apples does she give away?",
     "Ann has 40 apples. She gives 3 apples to each of 5 friends. ", "How many apples has she given away?"),
    (TOM, "Tom has $50. He buys 3 books for $7 each. ", "Find how much money he has left."),
    # "didn't" reads as "did not"
    ("Of the # students in a class, # passed the test. How many students did not pass the test?",
     "Of the 30 students in a class, 22 passed the test. ", "How many students didn’t pass the test?"),
])
def test_rewordings_that_ask_for_the_same_thing_pass(template, story, final):
    assert asking_word_change(template, story + final) is None


@pytest.mark.parametrize("final, word", [
    # a capitalised first word is not a name to leave out: it states when
    ("Initially, how much money does he have left?", "initially"),
    ("Yesterday, how much money did he have left?", "yesterday"),
])
def test_a_sentence_initial_word_is_not_taken_for_a_name(final, word):
    refusal = asking_word_change(TOM, "Tom has $50. He buys 3 books for $7 each. " + final)
    assert refusal is not None and repr(word) in refusal.lower()


def test_a_value_read_for_a_slot_of_words_is_stated_like_a_number():
    template = "If you deposit $# at #% a year, compounded #, how much will you have after # years?"
    question = "If you deposit $500 at 4% a year, compounded quarterly, how much will you have after 3 years?"
    assert asking_word_change(template, question, ["quarterly"]) is None
    assert "'quarterly'" in asking_word_change(template, question)  # unread, it is a condition of its own
    assert asking_word_change(template, question, ["quarterly", "", " "]) is None  # empty values state nothing


def test_the_stem_reads_a_verb_in_any_tense_and_a_plural():
    assert {word_stem(w) for w in ("plant", "plants", "planted", "planting")} == {"plant"}
    assert word_stem("bought") == word_stem("buys") == word_stem("buying") == word_stem("buy")
    assert word_stem("baked") == word_stem("bakes") == word_stem("bake")
    assert word_stem("stopped") == word_stem("stop") and word_stem("needed") == word_stem("needs")
    assert word_stem("used") == word_stem("uses") == word_stem("using") == word_stem("use")
    assert word_stem("tried") == word_stem("try") and word_stem("cookies") == word_stem("cookie")
    assert word_stem("feet") == word_stem("foot") and word_stem("people") == word_stem("person")
    assert word_stem("goes") == word_stem("going") == word_stem("went")
    assert word_stem("loaves") == word_stem("loaf") and word_stem("shelves") == word_stem("shelf")
    assert word_stem("saves") == word_stem("save") and word_stem("waves") == word_stem("wave")
    assert word_stem("speed") != word_stem("spend") and word_stem("need") != word_stem("ne")


HOSE_ENTRY = EntryPoint(
    id="hose", description="feet of hose to buy",
    template=("A gardener needs to buy new hose. He wants {per_bed} feet of hose for every flower bed. There are {beds} "
              "beds, and he already has {owned} feet of hose. How many feet of hose does he need to buy?"),
    params=(Param("per_bed", "feet per bed", int, 3, minimum=0), Param("beds", "beds", int, 8, minimum=0),
            Param("owned", "feet owned", int, 4, minimum=0)),
    root="r", answer_key="answer",
)
NEED = ("A gardener needs to buy new hose. He wants 2 feet of hose for every flower bed. There are 9 beds, and he "
        "already has 5 feet of hose. How many feet of hose does he need?")


def test_the_guard_applies_it_on_the_model_path_only_and_it_can_be_switched_off():
    values = {"per_bed": 2, "beds": 9, "owned": 5}
    guard = ReasoningGuard()
    refusal = guard(HOSE_ENTRY, NEED, values, "lm-draft")
    assert refusal is not None and "'buy'" in refusal
    assert guard(HOSE_ENTRY, NEED.replace("need?", "need to buy?"), values, "lm-draft") is None
    # the aligner has compared the final questions word by word before the guard sees an aligned reading
    assert guard(HOSE_ENTRY, NEED, values, "aligned") is None
    off = ReasoningGuard(GuardConfig(check_asking_words=False))
    assert off(HOSE_ENTRY, NEED, values, "lm-draft") is None


@pytest.mark.parametrize("question", [
    "", "?", "   ", "how much?" * 400, "A\x00B. How many?\x00", "NO SENTENCE ENDS HERE", "Dan has 5. " * 2000 + "How many?",
    "Tom has $50. He buys 3 books for $7 each. How much money does he have left? How much did he spend?",
])
def test_hostile_or_malformed_questions_get_a_verdict_not_an_exception(question):
    """The question is a client's text: empty, without a sentence, huge, with NUL bytes or several final questions,
    the check returns a refusal or None, as do regex characters in the values read for slots of words."""
    result = asking_word_change(TOM, question, ["(a+)+$", "[", "\\", ""])
    assert result is None or isinstance(result, str)
