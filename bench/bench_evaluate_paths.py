"""Benchmark (issues 30, 42): ``irsim.evaluate(paths)`` against trec_eval, pytrec_eval and a
baseline irsim.

The workload: the runs of ``bench_read.py`` (100 runs x 50 topics x 1000 documents, one TREC
run file per run, a graded qrels file), or real run files (``--run-files GLOB --qrels FILE``,
e.g. the DL 2019 runs of ``../shared/data/dl19-assessors``: decompressed into a temporary
directory first, the tag column set to the file's name so that run names are unique, as
every contender reads them); 5 measures. Each contender runs in its own fresh process per
round (imports and a warm-up on one run file outside the timing), rounds interleaved so
every contender sees the same load; the best of ``--repeats`` is kept:

1. ``irsim float64`` and ``irsim float32``: ``irsim.evaluate(run_paths, qrels_path,
   measures, scores=...)`` of this checkout in each mode (float64, the default, ranks as
   trec_eval 10.0; float32 as trec_eval <= 9.0.8 and pytrec_eval);
2. ``pytrec_eval``: ``parse_qrel`` + ``RelevanceEvaluator`` + ``parse_run`` / ``evaluate``
   per run file (parse + evaluate, its documented use);
3. ``baseline`` (optional, ``--baseline-python``): ``irsim.evaluate(paths, scores="float64")``
   as imported by another interpreter, e.g. the virtualenv of the main branch;
4. ``trec_eval`` (when its C binary is found: ``--trec-eval PATH``, else ``$TREC_EVAL``, else
   ``trec_eval`` on the ``PATH``; ``../shared/tools/build-trec-eval`` builds NIST's 10.0): the
   binary as its users run it, one process per run file, ``trec_eval -q -m map -m P.10 -m
   ndcg_cut.10 -m recip_rank -m Rprec qrels run``, its output read from a pipe (wall time,
   and the CPU time of its processes).

Before timing, the per-topic values of irsim in float32 mode and pytrec_eval are checked to
agree (1e-12), and those of the binary to agree with irsim's in float64 mode to its printed 4
decimals (every run file). Printed: the ratios trec_eval / irsim float64 (issue 42's goal: >=
3x), pytrec_eval / irsim float32 (goal: >= 2x) and baseline / irsim float64. Usage::

    python bench/bench_evaluate_paths.py [--runs 100] [--topics 50] [--docs 1000]
        [--run-files 'DIR/*.gz' --qrels FILE] [--repeats 3]
        [--baseline-python /work/venv/bin/python] [--trec-eval PATH]

Ratios only; no absolute target is tested.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_read import IRSIM, TREC, run_pytrec, write_files  # noqa: E402

#: one timed evaluation in a fresh process: argv = contender, qrels, run files...
_CHILD = """
import sys, time
kind, qrels, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
IRSIM = {irsim!r}
TREC = {trec!r}
if kind == "pytrec":
    import pytrec_eval
    def go(ps):
        with open(qrels) as f:
            qrel = pytrec_eval.parse_qrel(f)
        ev = pytrec_eval.RelevanceEvaluator(qrel, set(TREC))
        out = {{}}
        for p in ps:
            with open(p) as f:
                out[p] = ev.evaluate(pytrec_eval.parse_run(f))
        return out
else:
    import irsim
    scores = kind.split(":")[1]
    def go(ps):
        return irsim.evaluate(ps, qrels, IRSIM, missing="drop" if len(ps) == 1 else "error",
                              scores=scores)
go(paths[:1])
t, c = time.perf_counter(), time.process_time()
go(paths)
print(time.perf_counter() - t, time.process_time() - c)
"""


def timed_child(python: str, kind: str, qpath: Path, paths: list[Path]) -> tuple[float, float]:
    """(wall, CPU) seconds of one evaluation by `kind` in a fresh `python` process (run in
    the files' directory, so that no checkout's irsim is found on the working directory)."""
    code = _CHILD.format(irsim=IRSIM, trec=TREC)
    out = subprocess.run([python, "-c", code, kind, str(qpath), *map(str, paths)],
                         capture_output=True, text=True, check=True, cwd=qpath.parent)
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


#: trec_eval's -m options of the measures (TREC names their output).
TREC_EVAL_MEASURES = ["map", "P.10", "ndcg_cut.10", "recip_rank", "Rprec"]


def run_irsim(paths: list[Path], qpath: Path, scores: str):
    """irsim's per-topic values of the files in one mode (long DataFrame)."""
    import irsim

    return irsim.evaluate([str(p) for p in paths], str(qpath), IRSIM, scores=scores)


def copy_runs(pattern: str, tmp: Path) -> list[Path]:
    """The run files of `pattern` as plain text in `tmp` (``.gz`` decompressed; every
    contender reads the same bytes), each named ``<name>.run`` with ``name`` in its tag
    column (files' tags need not be unique: two DL 2019 runs share one)."""
    paths = []
    for src in sorted(glob.glob(os.path.expanduser(pattern))):
        name = Path(src[:-3] if src.endswith(".gz") else src).stem
        opener = gzip.open if src.endswith(".gz") else open
        with opener(src, "rt") as f:
            lines = [line.split() for line in f if line.strip()]
        dst = tmp / f"{name}.run"
        dst.write_text("".join(f"{q} {it} {d} {r} {s} {name}\n" for q, it, d, r, s, _ in lines))
        paths.append(dst)
    if not paths:
        raise SystemExit(f"no run file matches {pattern!r}")
    return paths


def trec_eval_command(binary: str, qpath: Path, path: Path) -> list[str]:
    """The binary's command line for one run file: per topic (-q), the five measures."""
    return [binary, "-q", *(a for m in TREC_EVAL_MEASURES for a in ("-m", m)), str(qpath),
            str(path)]


def children_cpu() -> float:
    """CPU seconds of this process's finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_trec_eval(binary: str, qpath: Path, paths: list[Path]) -> tuple[float, float]:
    """(wall, CPU) seconds of the binary over every run file, one process per file."""
    t, c = time.perf_counter(), children_cpu()
    for p in paths:
        subprocess.run(trec_eval_command(binary, qpath, p), stdout=subprocess.PIPE,
                       check=True)
    return time.perf_counter() - t, children_cpu() - c


def check_trec_eval(binary: str, paths: list[Path], qpath: Path) -> float:
    """Largest |irsim - trec_eval| over every (run, topic, measure) of the binary's -q
    output (printed to 4 decimals), irsim in float64 mode (trec_eval 10.0's reading)."""
    df = run_irsim(paths, qpath, "float64")
    want = {(s, str(t), m): v for s, t, m, v in zip(df.system, df.topic, df.metric, df.value,
                                                    strict=True)}
    names = dict(zip(TREC, IRSIM, strict=True))
    worst, seen = 0.0, 0
    for p in paths:
        out = subprocess.run(trec_eval_command(binary, qpath, p), capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            measure, topic, value = line.split()
            if topic != "all" and measure in names:
                worst = max(worst, abs(float(value) - want[(p.stem, topic, names[measure])]))
                seen += 1
    if seen != len(want):
        raise SystemExit(f"trec_eval printed {seen} per-topic values, irsim {len(want)}")
    return worst


def check_agreement(paths: list[Path], qpath: Path) -> float:
    """Largest |irsim - pytrec_eval| over every (run, topic, measure), irsim in float32
    mode (pytrec_eval's reading of the scores)."""
    df, res = run_irsim(paths, qpath, "float32"), run_pytrec(paths, qpath)
    worst = 0.0
    for name, trec in zip(IRSIM, TREC, strict=True):
        sub = df[df.metric == name]
        ref = np.array([res[s][t][trec] for s, t in zip(sub.system, sub.topic, strict=True)])
        worst = max(worst, float(np.abs(ref - sub.value.to_numpy()).max()))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ranked", action="store_true",
                    help="write each topic's lines in rank order, as real run files are")
    ap.add_argument("--run-files", default=None,
                    help="real run files (a glob; .gz accepted) instead of synthetic runs")
    ap.add_argument("--qrels", default=None, help="the qrels of --run-files")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline-python", default=None,
                    help="an interpreter whose irsim is the baseline (e.g. main's venv)")
    ap.add_argument("--trec-eval", default=None,
                    help="trec_eval's C binary (default: $TREC_EVAL, else trec_eval on PATH)")
    args = ap.parse_args()
    if (args.run_files is None) != (args.qrels is None):
        ap.error("--run-files and --qrels go together")
    binary = args.trec_eval or os.environ.get("TREC_EVAL") or shutil.which("trec_eval")

    import irsim

    contenders = [("irsim float64", sys.executable, "irsim:float64"),
                  ("irsim float32", sys.executable, "irsim:float32"),
                  ("pytrec_eval", sys.executable, "pytrec")]
    if args.baseline_python:
        contenders.append(("baseline", args.baseline_python, "irsim:float64"))
    times: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.run_files:
            paths = copy_runs(args.run_files, Path(tmp))
            qpath = Path(tmp) / "qrels.txt"
            qpath.write_bytes(Path(args.qrels).read_bytes())
            lines = sum(p.read_bytes().count(b"\n") for p in paths)
            what = (f"{len(paths)} run files ({args.run_files}) = {lines:,} lines, "
                    f"{sum(p.stat().st_size for p in paths) / 1e6:.1f} MB")
        else:
            from bench_metrics import make_data

            runs, qrels = make_data(args.runs, args.topics, args.docs, args.seed)
            what = (f"{args.runs} runs x {args.topics} topics x {args.docs} docs = "
                    f"{len(runs):,} lines in {args.runs} files")
            paths, qpath = write_files(Path(tmp), runs, qrels, args.docs, ranked=args.ranked)
            del runs
        judgments = qpath.read_bytes().count(b"\n")
        print(f"{what}; {judgments:,} judgments; {len(IRSIM)} measures; "
              f"irsim {irsim.__version__}, python {platform.python_version()}, "
              f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
        worst = check_agreement(paths, qpath)
        assert worst <= 1e-12, worst
        if binary:
            worst_binary = check_trec_eval(binary, paths, qpath)
            assert worst_binary <= 5.0001e-5, worst_binary
        for r in range(args.repeats):
            for label, python, kind in contenders:
                times.setdefault(label, []).append(timed_child(python, kind, qpath, paths))
            if binary:
                times.setdefault("trec_eval", []).append(timed_trec_eval(binary, qpath, paths))
            print(f"round {r + 1} (load {os.getloadavg()[0]:.1f}): "
                  + ", ".join(f"{n} {v[-1][0]:.2f} s (CPU {v[-1][1]:.2f})"
                              for n, v in times.items()), flush=True)
    wall = {n: min(w for w, _ in v) for n, v in times.items()}
    cpu = {n: min(c for _, c in v) for n, v in times.items()}
    print(f"\nbest of {args.repeats}, wall (CPU seconds of the process: steadier under load):")
    for name in times:
        print(f"  {name:14s} {wall[name]:7.2f} s  (CPU {cpu[name]:.2f} s)")

    def ratio(a: str, b: str) -> str:
        return f"{wall[a] / wall[b]:.2f}x wall, {cpu[a] / cpu[b]:.2f}x CPU"

    if binary:
        print(f"\ntrec_eval / irsim:   {ratio('trec_eval', 'irsim float64')}   (float64 mode, "
              "trec_eval 10.0's reading; goal >= 3x; one trec_eval process per run file, as "
              "it is run)")
    else:
        print("\ntrec_eval: its C binary was not found (--trec-eval PATH, $TREC_EVAL or the "
              "PATH; ../shared/tools/build-trec-eval builds it); not timed")
    print(f"pytrec_eval / irsim: {ratio('pytrec_eval', 'irsim float32')}   (float32 mode, "
          "pytrec_eval's reading; goal >= 2x)")
    if "baseline" in times:
        print(f"baseline / irsim:    {ratio('baseline', 'irsim float64')}   (float64 mode)")
    print(f"(values agree with pytrec_eval in float32 mode: max |diff| {worst:.1e}"
          + (f"; with trec_eval to its 4 decimals: max |diff| {worst_binary:.1e}, "
             "float64 mode)" if binary else ")"))


if __name__ == "__main__":
    main()
