"""Parsers for the paper's answer formats, the templates, and the image banks."""

from __future__ import annotations

import json

import pytest

from promptprism import ImageBank, InputError
from promptprism.llm.answers import (
    parse_attributes,
    parse_description,
    parse_prompt_list,
    parse_prompt_pairs,
    parse_rating,
)
from promptprism.methods.compcon import load_id2_splits, load_prompt_bank, load_templates, missing_images
from promptprism.methods.compcon.image_sources import image_grid, resolve_source


def test_attributes_under_model_a_only():
    text = (
        'Sure.\n\n**Model a contains:**\n\n* **Wet streets**\n\n* neon lights.\n- "fog"\n• wet streets\n\n'
        "### Model B contains:\n\n* sunny sky\n"
    )
    assert parse_attributes(text) == ["Wet streets", "neon lights", "fog"]
    assert parse_attributes("Model A contains:\n\nModel B contains:\n* x") == []
    assert parse_attributes("Model A contains: rain, fog") == ["rain", "fog"]
    with pytest.raises(ValueError, match="Model A contains"):
        parse_attributes("The images differ in colour.\n* blue")


def test_description_and_key_concepts():
    text = (
        "Thought Process: the prompts share sadness.\nMore thoughts.\n\n"
        "Description: Diverging prompts describe **loneliness** and rain.\n\n"
        "Key Concepts: [melancholy, \"isolation\", 'rainy days']"
    )
    desc, concepts = parse_description(text)
    assert desc == "Diverging prompts describe loneliness and rain"
    assert concepts == ["melancholy", "isolation", "rainy days"]
    assert parse_description("**Description:** x y\n**Key Concepts:**\n- a\n- b")[1] == ["a", "b"]
    with pytest.raises(ValueError, match="Description"):
        parse_description("Key Concepts: [a]")
    with pytest.raises(ValueError, match="Key Concepts"):
        parse_description("Description: something")
    with pytest.raises(ValueError, match="empty"):
        parse_description("Description: something\nKey Concepts: []")


def test_prompt_list():
    text = (
        'Here you go:\n1. A cat in the rain.\n2) "A lonely lighthouse"\n**3.** A storm'
        + "\n\n4. A cat in the rain."
    )
    assert parse_prompt_list(text) == ["A cat in the rain", "A lonely lighthouse", "A storm"]
    with pytest.raises(ValueError, match="numbered list"):
        parse_prompt_list("no list here")


def test_ratings_in_the_papers_forms():
    assert parse_rating("<rating>2</rating>") == 2
    assert parse_rating("They are related... so <rating>1</rating> wait, <rating>3</rating>") == 3
    assert parse_rating("rating_i2/rating_i") == 2
    assert parse_rating("Rating: 3") == 3
    assert parse_rating("2") == 2
    with pytest.raises(ValueError):
        parse_rating("<rating>5</rating>")


def test_prompt_pairs_d2():
    text = (
        "- 1a. A farmer with pigs. It rains.\n- 1b. A farmer with pigs in dark shadows.\n"
        + "- 2a. x\n- 3b. orphan"
    )
    assert parse_prompt_pairs(text) == [
        ("A farmer with pigs. It rains", "A farmer with pigs in dark shadows")
    ]
    with pytest.raises(ValueError):
        parse_prompt_pairs("nothing")


def test_templates_are_the_papers_and_can_be_overridden(tmp_path):
    t = load_templates()
    assert "Model a contains:" in t["attribute_discovery"] and "{prompt}" in t["attribute_discovery"]
    assert "Key Concepts: [diverging concept 1" in t["description"].format(
        attribute="x", diverging_prompts="", non_diverging_prompts=""
    )
    (tmp_path / "prompt_generation.txt").write_text("Give me {num_prompts} prompts about {description}.")
    assert load_templates(tmp_path)["prompt_generation"].startswith("Give me")
    (tmp_path / "description.txt").write_text("Describe {nonsense}")
    with pytest.raises(InputError, match="unknown field"):
        load_templates(tmp_path)


def test_id2_splits_shipped():
    splits = load_id2_splits()
    assert len(splits) == 60
    assert splits[0] == {
        "id": 0,
        "attribute": "the Chrysler Building",
        "concepts": ["new york city", "tourism in new york city", "life in new york city"],
    }
    assert any(s["concepts"] == ["1990's pop culture moments"] for s in splits)


def _png(path, color="red"):
    Image = pytest.importorskip("PIL.Image")
    Image.new("RGB", (8, 8), color).save(path)
    return path


def test_image_bank_forms_and_lookup(tmp_path):
    for i in range(3):
        _png(tmp_path / f"{i}.png")
    (tmp_path / "m.csv").write_text("prompt,image\nA cat,0.png\nA cat,1.png\nA dog,2.png\n")
    (tmp_path / "m.json").write_text(json.dumps({"A cat": ["0.png"], "A dog": "2.png"}))
    for m in ("m.csv", "m.json"):
        bank = ImageBank.load(tmp_path / m, "A")
        assert bank.n_images("a  CAT ") >= 1 and bank.n_images("A dog") == 1
        assert missing_images(bank, ["A cat", "A bird"]) == ["A bird"]
    sub = tmp_path / "folders" / "p1"
    sub.mkdir(parents=True)
    (sub / "prompt.txt").write_text("A bird\n")
    _png(sub / "x.png")
    bank = resolve_source(str(tmp_path / "folders"), "B")
    assert bank.n_images("A bird") == 1 and bank.images("A bird")[0].size == (8, 8)
    (tmp_path / "bad.jsonl").write_text('{"prompt": "x"}\n')
    with pytest.raises(InputError, match="row 1 needs"):
        ImageBank.load(tmp_path / "bad.jsonl")
    (tmp_path / "broken.png").write_text("not an image")
    (tmp_path / "b.jsonl").write_text('{"prompt": "x", "image": "broken.png"}\n')
    with pytest.raises(InputError, match="broken.png: not a readable image"):
        ImageBank.load(tmp_path / "b.jsonl").images("x")
    with pytest.raises(InputError, match="cannot import"):
        resolve_source("no_such_module_xyz:gen", "A")


def test_prompt_bank_and_grid(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    (tmp_path / "p.txt").write_text("a\nb\na\n")
    assert load_prompt_bank(tmp_path / "p.txt") == ["a", "b"]  # (each prompt once)
    (tmp_path / "gap.txt").write_text("a\n\nb\n")  # as generate's prompts file: a blank line is refused
    with pytest.raises(InputError, match=r"gap.txt: line 2: an empty line"):
        load_prompt_bank(tmp_path / "gap.txt")
    (tmp_path / "e.txt").write_text("\n \n")
    with pytest.raises(InputError, match="empty"):
        load_prompt_bank(tmp_path / "e.txt")
    grid = image_grid(
        [Image.new("RGB", (10, 10), "red")] * 2, [Image.new("RGB", (10, 10), "blue")] * 2, cell=20, gap=4
    )
    assert grid.size == (44, 44)
    assert grid.getpixel((5, 5)) == (255, 0, 0) and grid.getpixel((5, 30)) == (0, 0, 255)


def test_predictions_from_result_order():
    from promptprism.methods.compcon import predictions_from_result
    from promptprism.methods.compcon.evaluation import rating_score

    data = {
        "kind": "compcon",
        "attributes": [{"attribute": "fog"}, {"attribute": "rain"}],
        "descriptions": [
            {
                "iterations": [
                    {"iteration": 0, "key_concepts": ["a"], "score": 0.2},
                    {"iteration": 1, "key_concepts": ["b"], "score": 0.6},
                    {"iteration": 2, "key_concepts": [], "score": None},
                ]
            },
            {
                "iterations": [
                    {"iteration": 0, "key_concepts": ["c"], "score": 0.6},
                    {"iteration": 1, "key_concepts": ["d"], "score": None},
                ]
            },
        ],
    }
    p = predictions_from_result(data)
    assert p["attributes"] == ["fog", "rain"]
    assert p["descriptions"] == [["b"], ["c"], ["a"], ["d"]]
    assert [rating_score(r) for r in (1, 2, 3)] == [0.0, 0.5, 1.0]


# ------------------------------------------------------------------------------------------ hardening
class _Judge:
    """Rates every request 2 (a judge that always answers)."""

    model = "judge"

    def __init__(self):
        self.requests = []

    def chat(self, messages):
        self.requests.append(messages[-1]["content"])
        return "<rating>2</rating>"


def test_huge_key_concepts_answer_is_parsed_bounded():
    answer = "Description: rain at night\nKey Concepts: [" + "-" * 200_000 + "1]"
    description, concepts = parse_description(answer)  # no MemoryError / RecursionError
    assert description == "rain at night"
    assert len(concepts) == 1 and len(concepts[0]) <= 60_000
    nested = "Description: d\nKey Concepts: [" + "[" * 3000 + "]" * 3000 + "]"
    assert parse_description(nested)[0] == "d"
    assert parse_description('Description: d\nKey Concepts: ["a", \'b\', 3]')[1] == ["a", "b", "3"]


def test_eval_k_must_be_at_least_one():
    from promptprism import OptionError
    from promptprism.methods.compcon.evaluation import evaluate_predictions

    for k in (0, -1, 1.5, True):
        with pytest.raises(OptionError, match="k must be >= 1"):
            evaluate_predictions({"0": {"attributes": ["x"]}}, _Judge(), k=k)


def test_eval_a_string_attribute_is_one_attribute_not_its_characters():
    from promptprism.methods.compcon.evaluation import evaluate_predictions

    judge = _Judge()
    out = evaluate_predictions({"0": {"attributes": "red", "descriptions": ["a", "b"]}}, judge, k=5)
    row = out.per_split[0]
    assert row["attribute_ratings"] == [2] and row["description_ratings"] == [2]
    assert len(judge.requests) == 2 and '"red"' in judge.requests[0]


@pytest.mark.parametrize("pred", [5, None, "x", {"attributes": [1, 2]}, {"descriptions": 3},
                                  {"kind": "compcon", "attributes": [1]}])
def test_eval_malformed_predictions_are_input_errors(pred):
    from promptprism.methods.compcon.evaluation import evaluate_predictions

    with pytest.raises(InputError, match="prediction '0'"):
        evaluate_predictions({"0": pred}, _Judge(), k=1)


def test_banks_refuse_latin1_and_lone_surrogates(tmp_path):
    (tmp_path / "bank.txt").write_bytes("un caf\xe9\nna\xefve\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"bank.txt: line 1: not UTF-8"):
        load_prompt_bank(tmp_path / "bank.txt")
    (tmp_path / "bank.jsonl").write_text('{"prompt": "ok"}\n{"prompt": "bad \\ud800"}\n')
    with pytest.raises(InputError, match="lone surrogate"):
        load_prompt_bank(tmp_path / "bank.jsonl")
    (tmp_path / "m.csv").write_bytes("prompt,image\ncaf\xe9,a.png\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"m.csv: line 2: not UTF-8"):
        ImageBank.load(tmp_path / "m.csv")


def test_bank_image_over_the_pixel_limit_is_an_input_error(tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")
    _png(tmp_path / "big.png")
    (tmp_path / "m.jsonl").write_text(json.dumps({"prompt": "p", "image": "big.png"}) + "\n")
    bank = ImageBank.load(tmp_path / "m.jsonl")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)
    with pytest.raises(InputError, match=r"big.png: image is 64 pixels, over the limit of 10 pixels"):
        bank.images("p")
