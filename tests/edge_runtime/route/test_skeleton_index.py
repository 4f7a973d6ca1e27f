"""The skeleton index: entries found by their template's phrasing when names, objects and numbers change."""

from __future__ import annotations

from edge_runtime.route.skeleton_index import SkeletonIndex, skeleton_words

TEMPLATES = {
    "pineapples": "John has {hectares} hectares of a pineapple field. There are {per} pineapples per hectare. "
                  "John can harvest his pineapples every 3 months. How many pineapples can John harvest within a year?",
    "trays": "Jaime places eggs on the tray. Each tray can hold {per_tray} eggs. If he has {eggs} eggs and {trays} "
             "trays, how many eggs won't he be able to place on the tray?",
    "remoras": "Benny saw a {length}-foot shark with {count} {size}-inch remoras attached to it. What percentage of "
               "the shark's body length is the combined length of the remoras?",
    "buses": "A school takes {students} students to a museum. Each bus has {seats} seats. How many buses are needed?",
}


def index() -> SkeletonIndex:
    return SkeletonIndex(TEMPLATES.items())


def test_slots_and_numbers_are_masked_alike():
    assert skeleton_words("Ship {n} boxes in 3 days") == ["ship", "#", "boxe", "in", "#", "day"]


def test_reworded_questions_find_their_template_first():
    found = index().search(
        "Kenneth has 10 square meters of raspberry field. There are 7 raspberries per square meter. Kenneth can "
        "harvest his raspberries every 3 months. How many raspberries can Kenneth harvest within a year?")
    assert found[0].entry_id == "pineapples" and found[0].score > 0.25
    assert all(other.score < 0.5 * found[0].score for other in found[1:])
    found = index().search("David places almonds on some trays. Each tray can hold 27 almonds. If he has 104 "
                           "almonds and 2 trays, how many almonds won't he be able to place on the tray?")
    assert found[0].entry_id == "trays"
    exact = index().search(TEMPLATES["buses"].format(students=508, seats=50))
    assert exact[0].entry_id == "buses" and exact[0].score > 0.99


def test_unrelated_questions_score_low_and_k_and_the_floor_bound_the_answer():
    idx = index()
    assert idx.search("Who painted the Mona Lisa?") == []
    assert idx.search("What is the capital city of Australia?", min_score=0.0)[0].score < 0.2
    assert len(idx.search(TEMPLATES["buses"], k=2, min_score=0.0)) == 2
    assert len(idx) == 4
    assert SkeletonIndex([]).search("anything") == []


def test_the_exact_skeleton_is_one_lookup():
    idx = index()
    assert idx.exact(TEMPLATES["buses"].format(students="1,508", seats="fifty two")) == ["buses"]
    assert idx.exact(TEMPLATES["remoras"].format(length=140, count=7, size=24)) == ["remoras"]
    # reworded or unrelated: no exact candidate (the search still finds the reworded one)
    reworded = "A school takes 508 pupils to a museum. Each bus has 50 seats. How many buses are needed?"
    assert idx.exact(reworded) == [] and idx.search(reworded)[0].entry_id == "buses"
    assert idx.exact("How many legs does a spider have?") == []
