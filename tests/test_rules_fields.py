"""aspan/fields.py: the header's one precision (issue 30, mutation run; docs/DESIGN.md, "One precision for
the header fields"): a probability clamped to [0, 1] and rounded half up to the nearest 1/65535, and the
fields a sender stamps."""
from __future__ import annotations

import pytest

from aspan.fields import FIXED_ONE, SNOOP_COUNT_MAX, AspanFields, quantise, to_fixed


@pytest.mark.parametrize("x, word", [(-0.5, 0), (0.0, 0), (1.0, 65535), (1.5, 65535), (0.5, 32768),
                                     (0.4999, 32761), (1 / 65535, 1), (0.49 / 65535, 0), (0.5 / 65535, 1)])
def test_the_16_bit_word_is_clamped_and_rounded_half_up(x, word):
    assert to_fixed(x) == word
    assert quantise(x) == word / FIXED_ONE


def test_constants():
    assert (FIXED_ONE, SNOOP_COUNT_MAX) == (65535, 255)


def test_the_fields_a_sender_stamps_and_their_copy():
    f = AspanFields.stamped(0.3, snoop_after=1, snoop_limit=2)
    assert (f.pkt_effort, f.pkt_qos, f.snoop_after, f.snoop_limit, f.snoop_count) == (1.0, quantise(0.3), 1, 2, 0)
    assert AspanFields.stamped(0.3) == AspanFields(1.0, quantise(0.3), 0, 0, 0)
    g = AspanFields(0.25, 0.5, 3, 4, 5)
    c = g.copy()
    assert c == g and c is not g
    c.snoop_count += 1
    assert g.snoop_count == 5
    assert AspanFields() == AspanFields(1.0, 1.0, 0, 0, 0)
