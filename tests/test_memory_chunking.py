from __future__ import annotations

import itertools

from dexter.memory.chunking import Chunk, chunk_markdown


def _para(tag: str, words: int) -> str:
    return " ".join(f"{tag}{i}" for i in range(words))


def _lines_of(text: str, chunk: Chunk) -> str:
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


def test_empty_and_whitespace_give_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("  \n\n\t \n") == []


def test_small_text_is_one_chunk_with_line_numbers() -> None:
    text = "\n\n# Holdings\n\nI hold 200 NVDA at $410.\nBought in 2023.\n\n"
    chunks = chunk_markdown(text)
    assert chunks == [Chunk("# Holdings\n\nI hold 200 NVDA at $410.\nBought in 2023.", 3, 6)]


def test_splits_on_paragraph_boundaries_with_correct_lines() -> None:
    paragraphs = [_para(f"p{n}x", 60) for n in range(8)]  # about 330 chars each
    text = "\n\n".join(paragraphs)
    chunks = chunk_markdown(text, target_tokens=200, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 800
        # Every chunk is made of whole paragraphs, and its line range holds exactly its text.
        for part in chunk.text.split("\n\n"):
            assert part in paragraphs
        assert _lines_of(text, chunk) == chunk.text
    # Without overlap, the chunks cover every paragraph exactly once, in order.
    covered = [part for chunk in chunks for part in chunk.text.split("\n\n")]
    assert covered == paragraphs
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == len(text.split("\n"))


def test_consecutive_chunks_overlap_by_trailing_paragraphs() -> None:
    paragraphs = [_para(f"q{n}x", 25) for n in range(20)]  # about 140 chars each
    text = "\n\n".join(paragraphs)
    chunks = chunk_markdown(text, target_tokens=200, overlap_tokens=80)
    assert len(chunks) >= 3
    for before, after in itertools.pairwise(chunks):
        first_parts = before.text.split("\n\n")
        next_parts = after.text.split("\n\n")
        shared = [p for p in next_parts if p in first_parts]
        # Overlap is whole trailing paragraphs, about 80 tokens (320 chars) worth.
        assert shared and shared == first_parts[-len(shared) :]
        assert sum(len(p) for p in shared) <= 320
        assert after.start_line <= before.end_line
        assert after.end_line > before.end_line
    covered = {p for chunk in chunks for p in chunk.text.split("\n\n")}
    assert covered == set(paragraphs)


def test_headings_stay_with_the_following_paragraph() -> None:
    body1 = _para("a", 70)
    body2 = _para("b", 70)
    text = f"# Portfolio\n\n## NVDA\n\n{body1}\n\n## Preferences\n\n{body2}\n"
    chunks = chunk_markdown(text, target_tokens=120, overlap_tokens=0)
    assert len(chunks) == 2
    assert chunks[0].text.startswith("# Portfolio\n\n## NVDA\n\n" + body1[:10])
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 5)
    assert chunks[1].text == f"## Preferences\n\n{body2}"
    assert (chunks[1].start_line, chunks[1].end_line) == (7, 9)
    for chunk in chunks:
        assert not chunk.text.rstrip().split("\n")[-1].startswith("#")


def test_a_giant_paragraph_is_split_on_sentences() -> None:
    sentences = [f"Sentence {i} says revenue grew {i} percent this quarter." for i in range(120)]
    giant = " ".join(sentences)  # one line, far above the target
    text = f"intro line\n\n{giant}\n\nclosing line"
    chunks = chunk_markdown(text, target_tokens=100, overlap_tokens=0)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 400
    middle = [c for c in chunks if c.start_line == c.end_line == 3]
    assert len(middle) >= 5
    # Pieces end on sentence boundaries, and nothing is lost.
    for chunk in middle:
        assert chunk.text.endswith(".") or chunk.text.endswith("closing line")
    joined = " ".join(c.text for c in chunks)
    for sentence in sentences:
        assert sentence in joined


def test_a_giant_multiline_paragraph_is_split_on_lines() -> None:
    lines = [
        f"- {i}: bought 10 shares of TICK{i} at ${i}.00 on 2024-01-{i % 28 + 1:02d}"
        for i in range(60)
    ]
    text = "\n".join(lines)
    chunks = chunk_markdown(text, target_tokens=100, overlap_tokens=0)
    assert len(chunks) > 3
    expected_start = 1
    for chunk in chunks:
        assert chunk.start_line == expected_start
        assert _lines_of(text, chunk) == chunk.text
        assert len(chunk.text) <= 400
        expected_start = chunk.end_line + 1
    assert chunks[-1].end_line == 60


def test_unbreakable_text_is_cut_hard() -> None:
    text = "x" * 5000
    chunks = chunk_markdown(text, target_tokens=100, overlap_tokens=20)
    assert "".join(c.text for c in chunks) == text
    assert all(len(c.text) <= 400 for c in chunks)


def test_blank_lines_inside_code_fences_do_not_split() -> None:
    text = "Notes\n\n```\nline a\n\nline b\n```\n\nAfter"
    chunks = chunk_markdown(text, target_tokens=6, overlap_tokens=0)
    assert Chunk("```\nline a\n\nline b\n```", 3, 7) in chunks


def test_crlf_line_endings() -> None:
    text = "one\r\ntwo\r\n\r\nthree\r\n"
    chunks = chunk_markdown(text, target_tokens=2, overlap_tokens=0)
    assert chunks == [Chunk("one\ntwo", 1, 2), Chunk("three", 4, 4)]
