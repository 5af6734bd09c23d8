"""Every figure of every study's report, rendered from small real runs and checked.

Each study runs through the Python door on small synthetic data (`irsim.data.synthetic`) or
the shared test data, `Result.report(dir)` writes its report, and every figure the report
saves is inspected where it is saved (:func:`irsim.report.figure_hook`), before it is
written:

- every legend lies inside the figure (its bounding box in the renderer's window);
- an axes' legend covers none of that axes' data points and crosses none of its lines;
- a panel draws at most 12 series (lines of the legend), no two of which look alike (same
  colour, line style and marker), and no two bar groups share a colour;
- no colour is repeated within a panel, except as one of two factors: series of one colour
  are told apart by their line styles (never by a marker alone, as a colour cycle that wraps
  would);
- a figure draws every series its data hold (``Expect.series``) or says in words how many
  it draws ("12 of 16");
- every text is at least 8 pt at the saved size (points of a PNG shown at 100 dpi);
- the saved image is at most 1800 x 2000 px, its sides at most 4:1, with no blank band
  over 15% of a side at an edge;
- the figure title lies inside the figure and overlaps no axes, no axes title and no
  figure legend; no axes title overlaps another axes;
- a series of a single point is drawn with a visible marker;
- the tick labels of an axis of sampled sizes are exactly the sampled sizes;
- in a sweep figure, categorical sweep values are not joined with lines.

The same checks run on the sweep report (`irsim report <sweep dir>`) over a sweep directory
of real jobs.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

import irsim
from irsim.data.synthetic import synthetic_scores, synthetic_trec
from irsim.experiments import get, names
from irsim.experiments.test_errors import Urbano2019
from irsim.registry import DATA_KINDS
from irsim.report import figure_hook, figures

#: At most this many series (legend lines) in one panel.
MAX_SERIES = 12

#: Pixels of slack in every geometric comparison (antialiasing, rounding).
SLACK = 1.0

#: Smallest text in points at the saved size (a PNG shown at 100 dpi: text of a figure saved
#: at fewer dots per inch counts smaller).
MIN_POINTS = 8.0

#: Largest saved image, (width, height) in pixels, and the widest ratio of its sides.
MAX_PIXELS = (1800, 2000)
MAX_ASPECT = 4.0

#: Largest blank band at an edge of the saved image, as a share of that side.
MAX_BLANK = 0.15

#: A figure that draws fewer series than its data hold says so in words like these.
DROPPED_NOTE = re.compile(r"\b(\d+) of (\d+)\b")


# ------------------------------------------------------------------------------- the checks


@dataclass
class Expect:
    """What a figure's name tells about its axes (from the run's own parameters).

    ``sizes``: figure-name pattern -> (axis, sampled sizes) whose tick labels must be exactly
    those sizes; ``categorical``: figure-name patterns whose x values are categorical (no
    line may join them); ``series``: figure-name pattern -> the number of series its data
    hold (the figure draws that many distinct legend entries over its panels, or says in
    words that it draws fewer: "12 of 16").
    """

    sizes: dict[str, tuple[str, list[float]]] = field(default_factory=dict)
    categorical: tuple[str, ...] = ()
    series: dict[str, int] = field(default_factory=dict)


def _renderer(fig: Figure) -> Any:
    """Draw `fig` on an Agg canvas (as savefig does) and return the renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _shrunk(box: Bbox, by: float = SLACK) -> Bbox:
    return Bbox.from_extents(box.x0 + by, box.y0 + by, box.x1 - by, box.y1 - by)


def _overlap(a: Bbox, b: Bbox) -> bool:
    return _shrunk(a).overlaps(_shrunk(b))


def _axes(fig: Figure) -> list[Any]:
    """The visible panels (colour bars left out: they hold no series)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def _data_lines(ax: Any) -> list[Any]:
    """The lines of `ax` in data coordinates (no axhline / axvline), without errorbar caps."""
    caps = {id(c) for cont in ax.containers if isinstance(cont, ErrorbarContainer)
            for c in cont.lines[1]}
    return [ln for ln in ax.lines if ln.get_visible() and ln.get_transform() == ax.transData
            and id(ln) not in caps]


def _points(ax: Any, line: Any) -> np.ndarray:
    """The finite vertices of `line` in display pixels."""
    xy = np.column_stack([np.asarray(line.get_xdata(), float),
                          np.asarray(line.get_ydata(), float)])
    xy = xy[np.isfinite(xy).all(axis=1)]
    return ax.transData.transform(xy) if len(xy) else xy


def _along(ax: Any, line: Any, steps: int = 25) -> np.ndarray:
    """Points along the drawn segments of `line` (none when it has no line style), in
    display pixels."""
    pts = _points(ax, line)
    if line.get_linestyle() in ("None", "", " ") or len(pts) < 2:
        return np.empty((0, 2))
    t = np.linspace(0.0, 1.0, steps)[:, None, None]
    return (pts[:-1] * (1 - t) + pts[1:] * t).reshape(-1, 2)


def _ticks(ax: Any, axis: str) -> tuple[list[float], list[str]]:
    """The tick positions inside the view and their labels (major and labelled minor)."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    locs, labels = [], []
    for locator, formatter in ((a.get_major_locator(), a.get_major_formatter()),
                               (a.get_minor_locator(), a.get_minor_formatter())):
        ticks = [float(t) for t in locator()]
        texts = formatter.format_ticks(ticks) if ticks else []
        for t, s in zip(ticks, texts, strict=True):
            span = (hi - lo) * 1e-9
            if lo - span <= t <= hi + span and s.strip():
                locs.append(t)
                labels.append(s)
    return locs, labels


def _visible_texts(artist: Any) -> Iterator[Any]:
    """The visible texts under `artist` (an artist hidden hides everything under it: the
    tick labels of a hidden axis, the texts of an axes turned off)."""
    if not artist.get_visible():
        return
    if isinstance(artist, Text):
        yield artist
    for child in artist.get_children():
        yield from _visible_texts(child)


def _texts(fig: Figure, renderer: Any) -> list[Any]:
    """The visible, non-empty texts drawn inside the figure (titles, labels, tick labels,
    legends, annotations), each once."""
    box = _shrunk(fig.bbox, -SLACK)
    out: dict[int, Any] = {}
    for t in _visible_texts(fig):
        if not t.get_text().strip() or id(t) in out:
            continue
        ext = t.get_window_extent(renderer)
        if ext.width > 0 and ext.height > 0 and box.overlaps(ext):
            out[id(t)] = t
    return list(out.values())


def _legend_entries(fig: Figure) -> list[str]:
    """The entries of every legend of the figure (its panels' and its own), one per
    series drawn."""
    legends = [*fig.legends, *(ax.get_legend() for ax in _axes(fig))]
    return [t.get_text() for leg in legends if leg is not None for t in leg.get_texts()
            if t.get_text().strip()]


def _series_colours(ax: Any) -> dict[str, dict[str, str]]:
    """Colour -> {legend label: line style} of the series of `ax` drawn in it (lines,
    markers, filled areas and bar groups with a label; style ``"None"`` when no line joins
    the series)."""
    out: dict[str, dict[str, str]] = {}

    def add(colour: Any, label: str, style: Any = "None") -> None:
        if label and not label.startswith("_"):
            style = "None" if style in (None, "", " ", "none") else str(style)
            out.setdefault(to_hex(colour, keep_alpha=False), {})[label] = style

    for ln in _data_lines(ax):
        add(ln.get_color(), ln.get_label(), ln.get_linestyle())
    for c in ax.collections:
        colours = c.get_facecolor() if len(c.get_facecolor()) else c.get_edgecolor()
        if len(colours) and c.get_visible():
            add(colours[0], c.get_label())
    for c in ax.containers:
        if isinstance(c, BarContainer) and c.patches:
            add(c.patches[0].get_facecolor(), c.get_label())
    return out


def problems(fig: Figure, path: Path, expect: Expect | None = None) -> list[str]:
    """What is wrong with `fig` (saved as `path`), one message per finding."""
    expect = expect or Expect()
    name = path.name
    renderer = _renderer(fig)
    found: list[str] = []
    figbox = fig.bbox
    axes = _axes(fig)
    legends = [(f"figure legend {i}", leg, None) for i, leg in enumerate(fig.legends)]
    legends += [(f"legend of panel {i} ({ax.get_title()!r})", ax.get_legend(), ax)
                for i, ax in enumerate(axes) if ax.get_legend() is not None]
    for what, leg, ax in legends:
        box = leg.get_window_extent(renderer)
        if (box.x0 < figbox.x0 - SLACK or box.y0 < figbox.y0 - SLACK
                or box.x1 > figbox.x1 + SLACK or box.y1 > figbox.y1 + SLACK):
            found.append(f"{name}: {what} is clipped: {box.extents.round(1).tolist()} outside "
                         f"the figure {figbox.extents.round(1).tolist()}")
        if ax is None:
            for j, other in enumerate(axes):
                if _overlap(box, other.get_window_extent(renderer)):
                    found.append(f"{name}: {what} overlaps panel {j}")
            continue
        inner = _shrunk(box)
        covered = sum(int(inner.count_contains(_points(ax, ln)))
                      for ln in _data_lines(ax) if len(_points(ax, ln)))
        crossed = sum(int(inner.count_contains(_along(ax, ln))) > 0 for ln in _data_lines(ax))
        if covered or crossed:
            found.append(f"{name}: {what} covers {covered} data point(s) and crosses "
                         f"{crossed} line(s)")
    for i, ax in enumerate(axes):
        looks: dict[tuple, set[str]] = {}
        for ln in _data_lines(ax):
            if not ln.get_label().startswith("_"):  # a series of the legend
                key = (to_hex(ln.get_color()), ln.get_linestyle(), str(ln.get_marker()))
                looks.setdefault(key, set()).add(ln.get_label())
            pts = _points(ax, ln)
            if len(pts) == 1 and (ln.get_marker() in (None, "None", "", " ")
                                  or ln.get_markersize() < 4):
                found.append(f"{name}: panel {i} ({ax.get_title()!r}) draws a single point "
                             f"with marker {ln.get_marker()!r} of size {ln.get_markersize()}")
        series = sum(len(labels) for labels in looks.values())
        if series > MAX_SERIES:
            found.append(f"{name}: panel {i} ({ax.get_title()!r}) draws {series} series "
                         f"(more than {MAX_SERIES})")
        for key, labels in looks.items():
            if len(labels) > 1:
                found.append(f"{name}: panel {i} ({ax.get_title()!r}) has {len(labels)} series "
                             f"that look alike (colour {key[0]}, style {key[1]!r}, marker "
                             f"{key[2]!r}): {sorted(labels)[:4]}")
        bars = [to_hex(c.patches[0].get_facecolor()) for c in ax.containers
                if isinstance(c, BarContainer) and c.patches]
        if len(set(bars)) < len(bars):
            found.append(f"{name}: panel {i} repeats a bar colour: {bars}")
        for colour, styles in _series_colours(ax).items():
            # a colour repeats only as one factor of two (the other: the line style)
            if len(styles) > 1 and ("None" in styles.values()
                                    or len(set(styles.values())) < len(styles)):
                found.append(f"{name}: panel {i} ({ax.get_title()!r}) draws {len(styles)} "
                             f"series in one colour {colour} told apart by no line style: "
                             f"{sorted(styles)[:4]}")
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text().strip():
        box = suptitle.get_window_extent(renderer)
        if box.x0 < figbox.x0 - SLACK or box.x1 > figbox.x1 + SLACK or box.y1 > figbox.y1:
            found.append(f"{name}: the figure title is clipped")
        for i, ax in enumerate(axes):
            if _overlap(box, ax.get_window_extent(renderer)):
                found.append(f"{name}: the figure title overlaps panel {i}")
            if ax.get_title() and _overlap(box, ax.title.get_window_extent(renderer)):
                found.append(f"{name}: the figure title overlaps the title of panel {i}")
        for i, leg in enumerate(fig.legends):
            if _overlap(box, leg.get_window_extent(renderer)):
                found.append(f"{name}: the figure title overlaps figure legend {i}")
    for i, ax in enumerate(axes):
        if not ax.get_title():
            continue
        tbox = ax.title.get_window_extent(renderer)
        for j, other in enumerate(axes):
            if j != i and _overlap(tbox, other.get_window_extent(renderer)):
                found.append(f"{name}: the title of panel {i} overlaps panel {j}")
    for pattern, (axis, sizes) in expect.sizes.items():
        if not fnmatch.fnmatch(name, pattern):
            continue
        want = sorted(float(s) for s in sizes)
        for i, ax in enumerate(axes):
            locs, labels = _ticks(ax, axis)
            if sorted(locs) != want or sorted(labels, key=float) != [f"{s:g}" for s in want]:
                found.append(f"{name}: panel {i}'s {axis} ticks are {labels} at {locs}, not "
                             f"the sampled sizes {[f'{s:g}' for s in want]}")
    texts = _texts(fig, renderer)
    for pattern, total in expect.series.items():
        if not fnmatch.fnmatch(name, pattern):
            continue
        drawn = len(_legend_entries(fig))
        said = any(int(m[1]) == drawn and int(m[2]) == total
                   for t in texts for m in DROPPED_NOTE.finditer(t.get_text()))
        if drawn != total and not said:
            found.append(f"{name}: draws {drawn} of {total} series and does not say so")
    if any(fnmatch.fnmatch(name, p) for p in expect.categorical):
        for i, ax in enumerate(axes):
            joined = [ln.get_label() for ln in _data_lines(ax)
                      if ln.get_linestyle() not in ("None", "", " ") and len(_points(ax, ln)) > 1]
            if joined:
                found.append(f"{name}: panel {i} joins categorical values with lines: "
                             f"{joined[:3]}")
    return found


def saved_problems(path: Path, smallest: tuple[float, str] | None = None) -> list[str]:
    """What is wrong with the image saved at `path` (its smallest text, in points at the
    figure's size, is `smallest`): its size, shape, blank edges, the text at the saved
    size."""
    from PIL import Image

    name = path.name
    found = []
    with Image.open(path) as im:
        width, height = im.size
        dpi = round(float(im.info.get("dpi", (100.0, 100.0))[0]))  # stored per metre
        pixels = np.asarray(im.convert("RGB"), dtype=np.int16)
    if width > MAX_PIXELS[0] or height > MAX_PIXELS[1]:
        found.append(f"{name}: {width} x {height} px, more than {MAX_PIXELS[0]} x "
                     f"{MAX_PIXELS[1]}")
    if max(width / height, height / width) > MAX_ASPECT:
        found.append(f"{name}: {width} x {height} px, sides more than {MAX_ASPECT:g}:1")
    blank = (np.abs(pixels - pixels[0, 0]).max(axis=2) <= 8)
    rows, cols = blank.all(axis=1), blank.all(axis=0)
    for side, line, length in (("top", rows, height), ("bottom", rows[::-1], height),
                               ("left", cols, width), ("right", cols[::-1], width)):
        run = int(np.argmin(line)) if not line.all() else len(line)
        if run > MAX_BLANK * length:
            found.append(f"{name}: {run} px blank at the {side} ({run / length:.0%})")
    if smallest is not None:
        size = smallest[0] * min(1.0, dpi / 100.0)
        if size < MIN_POINTS - 1e-9:
            found.append(f"{name}: text of {size:.3g} pt at the saved size ({smallest[0]:g} pt "
                         f"at {dpi:g} dpi): {smallest[1][:40]!r}")
    return found


class Collector:
    """A :func:`irsim.report.figure_hook` that checks every figure saved."""

    def __init__(self, expect: Expect | None = None) -> None:
        self.expect = expect or Expect()
        self.names: list[str] = []
        self.found: list[str] = []

        self.paths: list[Path] = []
        self.smallest: dict[str, tuple[float, str]] = {}

    def __call__(self, fig: Figure, path: Path) -> None:
        self.names.append(path.name)
        self.paths.append(path)
        self.found += problems(fig, path, self.expect)
        texts = _texts(fig, _renderer(fig))
        if texts:
            small = min(texts, key=lambda t: t.get_fontsize())
            self.smallest[path.name] = (small.get_fontsize(), small.get_text())

    def check_saved(self) -> None:
        """The checks of the images saved: pixel size, shape, blank edges and the smallest
        text at the saved size."""
        for path in self.paths:
            self.found += saved_problems(path, self.smallest.get(path.name))


def _declared(study: str, png: str) -> bool:
    patterns = [re.sub(r"<[^>]+>", "*", f) for f in figures()[study]]
    return any(fnmatch.fnmatch(png, p) for p in patterns)


def render(study: str, run: Callable[[], Any], out: Path, expect: Expect | None = None,
           must_draw: tuple[str, ...] = ()) -> Collector:
    """Run `run` (a study call), write its report into `out` and check every figure."""
    res = run()
    seen = Collector(expect)
    with figure_hook(seen):
        res.report(out)
    seen.check_saved()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert sorted(seen.names) == pngs, "a figure was saved outside irsim.report.save_figure"
    for png in pngs:
        assert _declared(study, png), f"{png} is not declared by the report module of {study}"
    for pattern in must_draw:
        assert any(fnmatch.fnmatch(p, pattern) for p in pngs), f"no {pattern} among {pngs}"
    return seen


# ------------------------------------------------------------------------------- the data


@pytest.fixture(scope="module")
def scores() -> Any:
    """Three correlated metrics of 8 synthetic systems on 30 topics (a ScoreMatrix)."""
    return synthetic_scores(systems=8, topics=30, metrics=("AP", "P@10", "nDCG@10"),
                            seed=3).matrix


@pytest.fixture(scope="module")
def docs() -> tuple[Any, Any]:
    return synthetic_trec(runs=8, topics=12, docs_per_topic=150, depth=100, seed=2,
                          quality_sd=0.5)


# ------------------------------------------------------------------------------- the studies

def _relabelled(qrels: Any) -> Any:
    """`qrels` with every seventh grade changed (a second assessor)."""
    return irsim.data.Qrels(qrels.topic, qrels.docno,
                            np.where(np.arange(len(qrels.grade)) % 7 == 0,
                                     (qrels.grade + 1) % 4, qrels.grade))


M_VALUES = [4, 6]

#: Figures whose x axis is a list of sampled sizes: figure-name pattern -> the keyword of the
#: study's example holding them (its tick labels must be exactly those sizes).
SIZE_AXES = {"sd_by_size.png": "sd_sizes", "multiple_testing_*": "systems",
             "bayes_multiple_testing_*": "systems"}


def example_call(name: str, scores: Any, docs: tuple[Any, Any]) -> Callable[[], Any]:
    """The study `name`'s example (its registration's ``example.keywords``, seed 1) on the
    small synthetic data of its kind (:class:`irsim.registry.Example`)."""
    from irsim.registry import get

    entry = get(name)
    keywords = {**entry.example.keywords, "seed": 1}
    fn = getattr(irsim, name)
    if entry.data == "matrix":
        return lambda: fn(scores, **keywords)
    if entry.data == "docs":
        return lambda: fn(runs=docs[0], qrels=docs[1], **keywords)
    if entry.data == "runs_qrels_set":  # runs and several qrels: a second assessor
        return lambda: fn(runs=docs[0], qrels={"ref": docs[1], "other": _relabelled(docs[1])},
                          **keywords)
    raise AssertionError(f"{name}: no example data of kind {entry.data!r} in {__file__}")


def example_expect(name: str) -> Expect:
    """What the figures of `name`'s example must show (:data:`SIZE_AXES`)."""
    from irsim.registry import get

    keywords = get(name).example.keywords
    return Expect(sizes={pattern: ("x", list(keywords[key]))
                         for pattern, key in SIZE_AXES.items() if key in keywords})


def check_example_figures(name: str, scores: Any, docs: tuple[Any, Any], out: Path
                          ) -> Collector:
    """Run `name`'s example, write its report into `out` and check every figure; the
    figures its example names (``example.figures``) must be among them."""
    from irsim.registry import get

    return render(name, example_call(name, scores, docs), out, example_expect(name),
                  get(name).example.figures)


def test_every_declared_figure_is_drawn_by_a_test():
    """Every figure a report module declares is among the figures some test here draws
    (every study's example, :func:`check_example_figures`, and the tests below)."""
    from irsim.registry import studies

    drawn = {p for s in studies() for p in s.example.figures}
    drawn |= {"multiple_testing_*", "bayes_multiple_testing_*", "type3_error.png",
              "sweep_discpower.png", "compare_*", "assessors_*"}  # the tests below
    for study, declared_names in figures().items():
        for declared in declared_names:
            pattern = re.sub(r"<[^>]+>", "*", declared)
            assert any(fnmatch.fnmatch(d, pattern) or fnmatch.fnmatch(pattern, d)
                       for d in drawn), f"{study}'s {declared} is drawn by no figure test"


def test_every_study_with_figures_names_them_in_its_example():
    """A study whose report declares figures has an example that must draw some."""
    from irsim.registry import studies

    for s in studies():
        if figures().get(s.name):
            assert s.example.figures, f"{s.name}: its registration's example names no figure"


@pytest.mark.parametrize("study", names())
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_every_figure_of_a_study_passes_the_checks(study, scores, docs, tmp_path):
    seen = check_example_figures(study, scores, docs, tmp_path)
    assert not seen.found, "\n".join(seen.found)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [[10], [10, 20]])
def test_multiple_testing_figures_of_the_preset_layout(scores, tmp_path, sizes):
    """The preset's grid (5 corrections x 3 shares of true nulls), small, with one and two
    topic-set sizes: no clipped legend, no two lines alike in a panel, m ticks at the
    sampled numbers of systems."""
    seen = render("multiple_testing", lambda: irsim.multiple_testing(
        scores, metric="AP", tests=["t", "randomisation"], systems=M_VALUES, sizes=sizes,
        share_null=[1.0, 0.5, 0.2], trials=20, B=40, seed=1,
        bayes=["jzs_bf", "t_posterior", "bayesian_bootstrap"]),
        tmp_path, Expect(sizes={"multiple_testing_*": ("x", M_VALUES),
                                "bayes_multiple_testing_*": ("x", M_VALUES)}),
        ("multiple_testing_AP_t.png", "multiple_testing_AP_randomisation.png",
         "bayes_multiple_testing_AP.png"))
    assert not seen.found, "\n".join(seen.found)


@pytest.mark.slow
def test_type3_figure_with_one_delta(shared_data, tmp_path):
    """design=urbano2019 with a single delta: every Type III series is one point."""
    import pandas as pd

    pool = {"AP": [pd.read_csv(shared_data / "urbano" / f"adhoc{k}_ap.csv").iloc[:, :10]
                   for k in (5, 6)]}
    seen = render("test_errors", lambda: irsim.test_errors(
        pool, design=Urbano2019(power_trials=30), tests=["t", "sign"], sizes=[20],
        deltas=[0.05], alpha=[0.05], trials=30, B=50, seed=1),
        tmp_path / "run", Expect(), ("type3_error.png",))
    assert not seen.found, "\n".join(seen.found)


def test_compare_of_190_pairs(tmp_path):
    """20 systems (190 pairs): the figure stays within bounds (a matrix of the systems, not
    a 9,559-px forest), its text at 8 pt, no blank ends."""
    many = synthetic_scores(systems=20, topics=20, metrics=("AP",), seed=3).matrix
    seen = render("compare", lambda: irsim.compare(many, systems=list(many.systems), B=20,
                                                   seed=1), tmp_path, Expect(),
                  ("compare_AP.png",))
    assert not seen.found, "\n".join(seen.found)


def test_assessors_figures_at_the_preset_size(tmp_path):
    """The assessors figures with the preset's dimensions (9 qrels and their 16 composites,
    4 metrics x 2 tests x 3 corrections, 61 systems), from tables of those shapes: sparse
    and dense kappa pairs, decisions with all-"neither" bars, four tau panels."""
    import pyarrow as pa

    from irsim.experiments.assessors import report as ar
    from irsim.report import figure_hook

    rng = np.random.default_rng(0)
    people = ["nist"] + [f"assessor-{i}" for i in range(8)]
    mixes = [f"mix{i:04b}" for i in range(16)]
    sparse = [("nist", p) for p in people[1:]] + [(people[i], people[i + 1])
                                                  for i in range(1, 9, 2)]
    everyone = people + mixes
    dense = [(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]]
    metrics = ["AP(rel=2)", "nDCG@10", "P(rel=2)@10", "RR(rel=2)"]
    combos = [(m, t, c) for m in metrics for t in ("t", "randomisation")
              for c in ("none", "holm", "bh")]
    decisions = pa.table({
        "qrels": ["mix0000"] * len(combos), "metric": [m for m, _, _ in combos],
        "test": [t for _, t, _ in combos], "correction": [c for _, _, c in combos],
        "pairs": [1830] * len(combos),
        "both": [0 if t == "randomisation" and c == "holm" else 900 for _, t, c in combos],
        "neither": [1830 if t == "randomisation" and c == "holm" else 800
                    for _, t, c in combos],
        "lost": [0 if t == "randomisation" and c == "holm" else 60 for _, t, c in combos],
        "gained": [0 if t == "randomisation" and c == "holm" else 60 for _, t, c in combos],
        "opposite": [0 if t == "randomisation" and c == "holm" else 10 for _, t, c in combos]})
    sizes = [5, 10, 15, 20, 25, 30, 35, 40, 60, 80, 100, 150, 200, 300]
    q50 = np.tile(1 - 0.6 / np.sqrt(sizes), len(metrics))
    planning = pa.table({"metric": np.repeat(metrics, len(sizes)),
                         "correction": ["none"] * (len(metrics) * len(sizes)),
                         "topics": sizes * len(metrics), "tau_q05": q50 - 0.08,
                         "tau_q50": q50, "tau_q95": q50 + 0.05})
    systems = [f"run{i}" for i in range(61)]
    ref = rng.uniform(0.2, 0.7, len(systems))
    means = pa.table({"qrels": np.repeat(everyone[1:], len(systems)),
                      "metric": ["AP"] * (len(everyone) - 1) * len(systems),
                      "system": systems * (len(everyone) - 1),
                      "reference_mean": np.tile(ref, len(everyone) - 1),
                      "mean": np.tile(ref, len(everyone) - 1)
                      + rng.normal(0, 0.03, (len(everyone) - 1) * len(systems))})
    ranks = pa.table({"qrels": everyone[1:], "metric": ["AP"] * (len(everyone) - 1),
                      "tau_b": rng.uniform(0.7, 0.95, len(everyone) - 1)})
    for pairs in (sparse, dense):
        out = tmp_path / str(len(pairs))
        out.mkdir()
        seen = Collector()
        with figure_hook(seen):
            ar.kappa_heatmap(pa.table({
                "qrels_a": [a for a, _ in pairs], "qrels_b": [b for _, b in pairs],
                "labels": ["binary"] * len(pairs), "statistic": ["kappa"] * len(pairs),
                "mean": rng.uniform(0.2, 0.6, len(pairs)),
                "low": np.full(len(pairs), 0.1), "high": np.full(len(pairs), 0.7)}), out)
            ar.decision_bars(decisions, out)
            ar.simulated_tau(planning, out, target=0.9)
            ar.means_panels(means, ranks, out, "AP")
        seen.check_saved()
        assert len(seen.names) == 4
        assert not seen.found, "\n".join(seen.found)


# ------------------------------------------------------------------------------- the sweep


def _sweep(root: Path, scores: Any, jobs: list[dict[str, Any]]) -> Path:
    """A sweep directory as Hydra writes it (``<job>/.hydra/overrides.yaml``), each job a
    real discpower run of the Python door written by ``Result.report``."""
    root.mkdir()
    for i, params in enumerate(jobs):
        job = root / str(i)
        irsim.discpower(scores, seed=1, **params).report(job)
        (job / ".hydra").mkdir()
        overrides = [f"experiment.{k}=" + (f"[{','.join(map(str, v))}]" if isinstance(v, list) else
                                           str(v)) for k, v in params.items()]
        (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    return root


def _sweep_figures(sweep: Path, expect: Expect) -> Collector:
    from irsim.report.sweep import write_sweep_report

    seen = Collector(expect)
    with figure_hook(seen):
        write_sweep_report(sweep)
    seen.check_saved()
    assert "sweep_discpower.png" in seen.names
    return seen


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_sweep_figure_of_a_numeric_parameter(tmp_path):
    """One numeric parameter swept: a numeric axis whose ticks are the swept values; all
    16 rows (4 metrics x 2 tests x 2 levels) drawn, RR's too, a panel per metric, no colour
    repeated in a panel; the legends cover no point and stay inside."""
    four = synthetic_scores(systems=8, topics=30, metrics=("AP", "P@10", "nDCG@10", "RR"),
                            seed=3).matrix
    values = [100, 150, 300]
    sweep = _sweep(tmp_path / "sw", four,
                   [{"B": b, "tests": ["paired_bootstrap", "t"], "alpha": [0.05, 0.1]}
                    for b in values])
    seen = _sweep_figures(sweep, Expect(sizes={"sweep_*": ("x", values)},
                                        series={"sweep_discpower.png": 16}))
    assert not seen.found, "\n".join(seen.found)


def test_sweep_figure_of_categorical_values(scores, tmp_path):
    """A categorical parameter swept (the Monte Carlo p-value rule): its values are not
    joined with lines."""
    sweep = _sweep(tmp_path / "sw", scores,
                   [{"B": 100, "tests": ["paired_bootstrap"], "pvalue": v}
                    for v in ("count", "plus_one")])
    seen = _sweep_figures(sweep, Expect(categorical=("sweep_*",)))
    assert not seen.found, "\n".join(seen.found)


# ------------------------------------------------------------------------------- the presets

#: Monte Carlo sizes of a preset shrunk for the test (the layout of its figures is kept).
SHRINK = {"trials": 10, "power_trials": 10, "check_trials": 20, "samples": 30,
          "sd_samples": 5, "splits": 2}


def _presets() -> list[str]:
    """Presets of studies reading score matrices or runs and qrels (a study of another data
    kind, as assessors and budget, names DL19's qrels files in its presets: its figures are
    checked on synthetic qrels by test_every_figure_of_a_study_passes_the_checks)."""
    from golden.cases import presets, study_of

    return [p for p in presets() if get(study_of([f"experiment={p}"])).data in DATA_KINDS]


@pytest.mark.slow
@pytest.mark.parametrize("preset", _presets())
def test_every_preset_draws_checked_figures(preset, shared_data, docs, tmp_path):
    """Every preset's parameters (its figures' layout) with small Monte Carlo sizes, on a
    slice of TREC-8 ad hoc (60 runs, the preset's default metrics; matrix studies; the
    pooled design on ad hoc 5 and 6) or a small synthetic TREC collection (document
    studies): every figure passes the checks."""
    import math
    from importlib.resources import files

    import pandas as pd

    spec = yaml.safe_load((files("irsim.conf") / "experiment" / f"{preset}.yaml").read_text())
    study = next(d for d in spec["defaults"] if isinstance(d, str) and "@" in d).split("@")[0]
    params = dict(spec.get("experiment") or {})
    params.update({k: min(v, params[k]) if k in params else v for k, v in SHRINK.items()
                   if k in params})
    design = next((v for d in spec["defaults"] if isinstance(d, dict) for k, v in d.items()
                   if k.startswith("override /experiment/design")), None)
    if design is not None:  # a config group's option, with its own (shrunk) keys

        own = {k: min(v, SHRINK[k]) if k in SHRINK else v
               for k, v in (params.pop("design", None) or {}).items() if k != "fit_threads"}
        groups = get(study).config.GROUPS
        params["design"] = groups["design"][design](**own)
    if "B" in params:  # B * alpha >= 1 for every level
        import dataclasses

        config = get(study).config
        alphas = params.get("alpha", next((f.default if f.default is not dataclasses.MISSING
                                           else f.default_factory() for f in
                                           dataclasses.fields(config) if f.name == "alpha"),
                                          0.05))
        alphas = alphas if isinstance(alphas, list) else [alphas]
        params["B"] = max(20, math.ceil(1 / min(alphas) - 1e-9))
    urbano = shared_data / "urbano"
    metrics = {"AP": "ap", "P@10": "p10", "RR": "rr"}
    if get(study).data == "docs":
        data: Any = {"runs": docs[0], "qrels": docs[1]}
    elif design == "urbano2019":
        data = {m: [pd.read_csv(urbano / f"adhoc{k}_{f}.csv").iloc[:, :10] for k in (5, 6)]
                for m, f in list(metrics.items())[:2]}
        params["sizes"], params["deltas"] = [25, 50], params["deltas"][::3]
    else:
        wanted = (spec.get("collection") or {}).get("default_metrics") or list(metrics)
        data = {m: pd.read_csv(urbano / f"adhoc8_{f}.csv").iloc[:, :60]
                for m, f in metrics.items() if m in wanted}
    expect = Expect(sizes={"multiple_testing_*": ("x", params.get("systems", []))})
    fn = getattr(irsim, study)
    if isinstance(data, dict) and "runs" in data:
        run = lambda: fn(runs=data["runs"], qrels=data["qrels"], seed=1, **params)  # noqa: E731
    else:
        run = lambda: fn(data, seed=1, **params)  # noqa: E731
    seen = render(study, run, tmp_path / "run", expect)
    assert seen.names, f"{preset} drew no figure"
    assert not seen.found, "\n".join(seen.found)
