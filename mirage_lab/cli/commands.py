"""``mirage-lab search | verify | codegen | bench``: the engine's main entry points from a shell.

Each command takes graphs as text (``sources.py``: a benchmark name, ``fused:NAME``, a JSON file, a
``.py`` program or a run folder), prints what a person needs to read, and writes files only where
``--out`` says. Exit status: 0 on success, 1 when a check fails (``verify`` finds the graphs different, ``codegen
--emulate`` runs over its tolerance, ``bench`` times a kernel whose result is wrong), 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mirage_lab.cli.interrupt import stop_if_interrupted
from mirage_lab.cli.sources import Source, config_for, resolve
from mirage_lab.errors import InputError, PathError
from mirage_lab.ir.io import write_atomic
from mirage_lab.ir.node import plural
from mirage_lab.paths import output_dir, output_file
from mirage_lab.search.run_folder import DEFAULT_ROOT, runs_root

if TYPE_CHECKING:
    from mirage_lab.codegen import CodegenOptions


#: seconds ``--executor dask:ADDRESS`` waits for the scheduler to answer
DASK_CONNECT_S = 10


@contextlib.contextmanager
def executor_for(spec: str) -> Iterator[Any]:
    """"process", "serial", or "dask:ADDRESS" (a running Dask scheduler, e.g. dask:tcp://10.0.0.5:8786): a Dask
    client is connected for the block, says where its dashboard is, and is closed after it."""
    if not spec.startswith("dask:"):
        if spec not in ("process", "serial"):
            raise InputError(f"--executor {spec!r}: expected process, serial or dask:ADDRESS (e.g. "
                             "dask:tcp://10.0.0.5:8786)")
        yield spec
        return
    try:
        from dask.distributed import Client
    except ImportError:
        raise InputError("--executor dask:… needs dask.distributed: pip install -e '.[dist]'") from None
    address = spec.removeprefix("dask:")
    try:
        client = Client(address, timeout=DASK_CONNECT_S)
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(f"--executor {spec}: no Dask scheduler answered at {address!r} within {DASK_CONNECT_S} s "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'}); start one "
                         f"(dask scheduler, then dask worker ADDRESS on each machine) or check the address") from None
    try:
        _same_version(client, spec)
        workers = len(client.scheduler_info().get("workers", {}))
        print(f"Dask scheduler {address}: {workers} worker{'s' if workers != 1 else ''}; dashboard "
              f"{client.dashboard_link}", file=sys.stderr, flush=True)
        yield client.get_executor()
    finally:
        client.close()


def _worker_version() -> str:
    """What a Dask worker runs (called there): its mirage-lab version."""
    from mirage_lab.version import __version__

    return __version__


def _same_version(client: Any, spec: str) -> None:
    """Refuse, in one line, workers that lack mirage-lab or run another version: tasks cross as JSON and code."""
    from mirage_lab.version import __version__

    try:
        versions: dict[str, str] = client.run(_worker_version)
    except Exception as e:  # a worker without mirage-lab fails to import it; its error comes back here
        raise InputError(f"--executor {spec}: a worker cannot run mirage-lab ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else 'no detail'}); install mirage-lab {__version__} "
                         "on every worker (pip install 'mirage-lab[dist]')") from None
    other = {w: v for w, v in versions.items() if v != __version__}
    if other:
        shown = ", ".join(f"{w} has {v}" for w, v in sorted(other.items())[:3])
        raise InputError(f"--executor {spec}: workers run another mirage-lab version ({shown}; this client has "
                         f"{__version__}); install the same version on every worker")


def search(args: argparse.Namespace) -> int:
    from mirage_lab.ir.io import save
    from mirage_lab.search.runner import superoptimize

    output_dir(runs_root(args.runs), "root of the run folders (--runs)")
    out_dir = output_dir(args.out, "--out folder") if args.out else None
    html = output_file(args.html, "HTML report (--html)") if args.html else None
    source = resolve(args.program)
    config = config_for(source, args.preset, args.set or [])
    if args.time_limit is not None:
        config = config.replace(time_limit_s=args.time_limit)
    print(f"superoptimizing {source.label} with {config!r}", flush=True)
    with executor_for(args.executor) as executor:
        res = superoptimize(source.graph, config, executor=executor, run_dir=args.runs, progress=not args.quiet)
    stop_if_interrupted(res.report)
    print(f"\n{res}\n")
    if res.report.stop_reason != "complete" and res.run_dir is not None:
        print(f"the search stopped early ({res.report.stop_reason}); its finished tasks are kept in {res.run_dir}: "
              "run the same command again to resume", file=sys.stderr)
    if res.best is None:
        print("no verified μGraph; the report above says where the branches died", file=sys.stderr)
        return 0
    print(res.to_frame().head(args.top).to_string(index=False))
    print(f"\nthe best μGraph ({res.best.hash[:12]}):\n{res.best.graph}")
    out = out_dir or res.run_dir
    if out is not None:
        print(f"\nbest μGraph saved to {save(res.best.graph, out / 'best.json')}")
        write_atomic(out / "ranking.csv", res.to_frame().to_csv(index=False))
    if html is not None and res.run_dir is not None:
        from mirage_lab.cli.demo import html_report

        print(f"HTML report: {html_report(res.run_dir, html, progress=not args.quiet)}")
    return 0


# --------------------------------------------------------------------------- verify

def verify(args: argparse.Namespace) -> int:
    from mirage_lab.verify import verify as verify_graphs

    candidate = resolve(args.candidate)
    # fused:NAME and run folders imply their program; a benchmark program is its own
    against = resolve(args.against) if args.against else candidate.program or (candidate if candidate.benchmark
                                                                                else None)
    if against is None:
        raise InputError("say what to verify against: --against PROGRAM (a benchmark name, a file, …)")
    result = verify_graphs(candidate.graph, against.graph, trials=args.trials, seed=args.seed)
    print(f"{candidate.label} against {against.label}:\n{result.summary()}\n")
    print(result.to_frame().to_string(index=False))
    return 0 if result.equivalent else 1


# --------------------------------------------------------------------------- codegen

def codegen(args: argparse.Namespace) -> int:
    from mirage_lab.codegen import CodegenOptions, generate_cuda, plan_cuda

    if args.backend == "triton":
        if args.analyze:
            raise InputError("--analyze reads the CUDA backend's SASS; leave out --backend triton")
        return _codegen_triton(args)
    out = _out_file(args.out, "CUDA source (--out)")
    source = resolve(args.graph)
    options = CodegenOptions(prefetch=not args.no_prefetch, split_sums=not args.no_split,
                             tensor_cores=not args.no_tensor_cores, padding=not args.no_padding,
                             async_copies=not args.no_async_copies)
    cuda = generate_cuda(source.graph, options)
    if out is not None:
        write_atomic(out, cuda)
        print(f"CUDA source of {source.label} ({len(cuda.splitlines())} lines) written to {out}")
        print(plan_cuda(source.graph, options), flush=True)
    elif not args.analyze or args.out == "-":  # --analyze prints its tables instead, unless --out - asks for both
        sys.stdout.write(cuda)
    dynamic = {launch.name: launch.smem_bytes for launch in plan_cuda(source.graph, options).launches}
    for arch in _archs(args.ptx):
        _ptx(cuda, arch, dynamic)
    if args.analyze:
        _analyze(source, options, tuple(dict.fromkeys(args.arch)), args.hardware)
    return _emulate(source, cuda, options) if args.emulate else 0


def _analyze(source: Source, options: CodegenOptions, archs: tuple[str, ...], hardware: str | None) -> None:
    """``--analyze``: per architecture, one column per kernel (ptxas, occupancy, SASS mix, in flight, bound);
    ``hardware`` applies to the architectures of its family, the others get their default GPU."""
    from mirage_lab.codegen.analysis import analyze_kernel
    from mirage_lab.optimize.hardware import get_hardware

    for arch in archs:
        fits = hardware is not None and get_hardware(hardware).arch == arch.rstrip("af")
        frame = analyze_kernel(source.graph, arch, hardware=hardware if fits else None, options=options)
        if hardware is not None and not fits:
            print(f"--hardware {hardware} is not an {arch} GPU: {arch} is analysed on {frame['GPU'].iloc[0]}",
                  file=sys.stderr)
        table = frame.set_index("kernel").drop(columns=["arch", "GPU", "program DRAM floor µs"]).T
        floor = frame["program DRAM floor µs"].iloc[0]
        print(f"\nKernel analysis of {source.label} for {arch} on {frame['GPU'].iloc[0]} (static SASS counts; "
              f"the program's DRAM floor: {floor} µs)\n{table.to_string()}", flush=True)


def _out_file(out: str | None, what: str) -> Path | None:
    """``--out``'s file, or None for standard output (no --out, or ``--out -``)."""
    if out in (None, "-"):
        return None
    try:
        return output_file(out, what)
    except PathError as e:
        raise PathError(f"{e}; to print it instead, leave out --out (or write --out -)") from None


def _archs(asked: list[str] | None) -> tuple[str, ...]:
    """``--ptx``'s architectures; ``--ptx`` alone means the default ones, and says so."""
    from mirage_lab.codegen.arch import ARCHS

    if asked is None:
        return ()
    if not asked:
        print(f"--ptx names no architecture: compiling for the default ones, {' '.join(ARCHS)}", file=sys.stderr)
        return ARCHS
    return tuple(dict.fromkeys(asked))


def _ptx(cuda: str, arch: str, dynamic: dict[str, int]) -> None:
    """ptxas's registers and shared memory per kernel. ptxas counts only the static ``__shared__`` arrays; the
    plan's tiles live in dynamic shared memory (``dynamic``: bytes per kernel, given at launch), so both are said."""
    from mirage_lab.codegen.compile import nvcc_ptx

    res = nvcc_ptx(cuda, arch, resources=True)
    regs = ", ".join(f"{k}: {r.registers} regs, {r.smem_bytes} B static + {dynamic.get(k, 0)} B dynamic smem"
                     for k, r in res.resources.items())
    kernels = plural(len(res.kernels), "kernel")
    print(f"nvcc --ptx -arch={arch}: {kernels} in {res.seconds:.1f} s ({regs or 'no kernels'})", file=sys.stderr)


def _emulate(source: Source, cuda: str, options: CodegenOptions) -> int:
    """Run the generated CUDA on the CPU (g++ emulation) against the interpreter, on random inputs: 0 when every
    output is within the graph's storage-type tolerance, else 1."""
    from mirage_lab.bench.tolerance import tolerance_for
    from mirage_lab.codegen.emulate import run_cuda_on_cpu

    inputs, want = _emulation_inputs(source, "float32")
    got = run_cuda_on_cpu(source.graph, inputs, source=cuda, options=options)
    return _judge("emulated on the CPU", got, want, *tolerance_for(source.graph))


def _emulation_inputs(source: Source, dtype: str) -> tuple[list[Any], list[Any]]:
    """The seeded random inputs of an emulation and the interpreter's outputs on them."""
    from mirage_lab.bench.harness import input_scale, random_inputs
    from mirage_lab.semantics.interpret import interpret

    inputs = random_inputs(source.graph, seed=0, scale=input_scale(source.benchmark or ""))
    return inputs, interpret(source.graph, inputs, dtype=dtype)


def _judge(what: str, got: list[Any], want: list[Any], kind: str, tolerance: float) -> int:
    """Print how far a backend's run is from the interpreter, against the tolerance; the exit status."""
    from mirage_lab.bench.tolerance import agreement

    result = agreement(got, want, tolerance, kind)
    print(f"{what}: relative error against the interpreter {result}", file=sys.stderr)
    return 0 if result.ok else 1


def _codegen_triton(args: argparse.Namespace) -> int:
    """``codegen --backend triton``: the module, its PTX per target, and its run in Triton's interpreter."""
    from mirage_lab.codegen.triton import triton_module
    from mirage_lab.codegen.triton.toolchain import compile_ptx

    out = _out_file(args.out, "Triton module (--out)")
    source = resolve(args.graph)
    module = triton_module(source.graph)
    if out is not None:
        write_atomic(out, module.source)
        print(f"Triton module of {source.label} ({len(module.source.splitlines())} lines, "
              f"{plural(len(module.kernels), 'kernel')}) written to {out}")
    else:
        sys.stdout.write(module.source)
    for arch in _archs(args.ptx):
        ptx = compile_ptx(module.source, arch)
        print(f"triton --target {arch}: {plural(len(ptx.ptx), 'kernel')} in {ptx.seconds:.1f} s", file=sys.stderr)
    return _emulate_triton(source, module) if args.emulate else 0


def _emulate_triton(source: Source, module: Any) -> int:
    from mirage_lab.bench.tolerance import TOLERANCE
    from mirage_lab.codegen.triton.toolchain import emulate

    inputs, want = _emulation_inputs(source, "float64")
    got = emulate(module.source, inputs, module.dtype)
    return _judge("Triton's interpreter on the CPU", got, want, module.dtype, TOLERANCE[module.dtype])


# --------------------------------------------------------------------------- bench

def bench(args: argparse.Namespace) -> int:
    from mirage_lab.bench import timing
    from mirage_lab.bench.harness import find_reference_dir

    out = output_dir(args.out, "--out folder") if args.out else None
    if args.reference_dir is not None:
        find_reference_dir(args.reference_dir, "--reference-dir")
    mods = None if args.cpu else timing.gpu_modules()
    if mods is None or isinstance(mods, str):
        if isinstance(mods, str):
            print(f"no GPU timing ({mods}); timing the numpy interpreter on the CPU instead", file=sys.stderr)
        unused = [flag for flag, given in (("--reference-dir", args.reference_dir is not None),
                                           ("--max-graphs", args.max_graphs is not None)) if given]
        if unused:
            print(f"{' and '.join(unused)} {'go' if len(unused) > 1 else 'goes'} with GPU timings, which time "
                  "reference μGraphs; the CPU table times each program and its hand-fused μGraph only",
                  file=sys.stderr)
        rows = timing.measure_cpu(args.programs, args.batches, hardware=args.hardware or "H100",
                                  repeats=args.repeats or 3)
        hw_label = f"cpu_{timing.cpu_name()}"
    else:
        cupy, run = mods
        hw_label = timing.gpu_name(cupy)
        rows = timing.measure_gpu(cupy, run, args.hardware or timing.preset_for(hw_label), args.programs,
                                  args.batches, max_graphs=args.max_graphs or 4, repeats=args.repeats or 200,
                                  reference_dir=args.reference_dir)
    df = timing.with_speedups(pd.DataFrame(rows))
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if out is not None:
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in hw_label).strip("_")
        write_atomic(out / f"{name}.csv", df.to_csv(index=False))
        print(f"wrote {out / f'{name}.csv'}; proxy_us is the cost model's estimate, median_us a measurement")
    return timing.check_results(df)



# --------------------------------------------------------------------------- runs

def runs(args: argparse.Namespace) -> int:
    """List the run folders under ROOT; with --remove, delete the selected ones (see ``search/run_list.py``)."""
    from mirage_lab.search.run_list import remove_runs, runs_table

    if args.root is not None and args.runs is not None and Path(args.root) != Path(args.runs):
        raise InputError(f"two run roots given ({args.root} and --runs {args.runs}); give one")
    args.root = args.runs or args.root or DEFAULT_ROOT
    selecting = args.older_than is not None or args.all
    if (args.keep_best or args.dry_run or selecting) and not args.remove:
        raise InputError("--older-than, --all, --keep-best and --dry-run go with --remove (listing takes none)")
    if args.remove:
        if not selecting:
            raise InputError("say which runs to remove: --older-than AGE (30m, 12h, 7d, 2w) or --all")
        done = remove_runs(args.root, older_than_s=args.older_than, everything=args.all, keep_best=args.keep_best,
                           dry_run=args.dry_run)
        print(done.to_string(index=False) if len(done) else f"no run folder under {runs_root(args.root)} was selected")
        return 0
    table = runs_table(args.root)
    if not len(table):
        print(f"no run folders under {runs_root(args.root)}")
        return 0
    print(table.to_string(index=False, na_rep="-"))
    print(f"{len(table)} run folders, {table['MB'].sum():.1f} MB")
    return 0
