"""Tests for replay_cli.report.html_parts: the frontier's SVG labels never overprint."""

import re

from replay_cli.report.html_parts import frontier_svg


def _point(n, kept, gain, role="eligible"):
    return {
        "kept": kept,
        "gain": gain,
        "n": n,
        "ids": [f"c{i}" for i in n],
        "labels": [f"config {i}" for i in n],
        "role": role,
    }


def test_frontier_labels_never_overlap_and_stay_inside():
    # A cluster of near points, one standing for many configs, one at the right edge.
    points = [_point([i], 0.95 + 0.001 * i, 1.0 + 0.01 * (i % 3)) for i in range(1, 9)]
    points += [_point(list(range(9, 20)), 1.0, 0.0, "off"), _point([20], 0.97, 1.0, "recommended")]
    svg = frontier_svg(points, x="kept", y="gain", xlabel="x", ylabel="y", title="t", vline=0.95)
    width = float(re.search(r'width="(\d+)"', svg).group(1))
    labels = [
        (float(x), float(y), text)
        for x, y, text in re.findall(
            r'<text x="([\d.]+)" y="([\d.]+)" class="pt-label">([^<]*)<', svg
        )
    ]
    assert len(labels) == len(points)
    assert "9,10+9" in [t for _, _, t in labels]  # many configs: the first two and a count
    boxes = [(x, y - 9, 6.2 * len(t) + 2, 11.0) for x, y, t in labels]
    for i, (ax, ay, aw, ah) in enumerate(boxes):
        assert ax >= 0
        assert ax + aw <= width
        for bx, by, bw, bh in boxes[i + 1 :]:
            assert not (ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah)
