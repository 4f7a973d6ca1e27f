"""``arc-edge``: the device-side command line (serve, invoke, push, inspect, run-compiled)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge_runtime.fleet.options import FollowOptions

#: ``arc-edge invoke`` exit code when the server answered with a MISS (0 = HIT, 2 = error, 130 = Ctrl-C).
EXIT_MISS = 3


RUN_COMPILED_EXAMPLE = """example:
  arc-build compile-entries bundles/examples --out build/compiled
  arc-edge run-compiled build/compiled/ideal-gas-pressure.py --params '{"moles": 2, "temperature": 300, "temperature_unit": "kelvin", "volume": 10, "volume_unit": "litres"}'
"""  # noqa: E501 - one command to copy, as printed


def main(argv: list[str] | None = None) -> int:
    """Run one ``arc-edge`` command; every error is one line on stderr with exit 2, Ctrl-C exits 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("arc-edge: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The whole ``arc-edge`` command line; ``serve``'s flags come from the options tree."""
    from edge_runtime.cli_help import DefaultsHelpFormatter as fmt
    from edge_runtime.flags import add_flags
    from edge_runtime.serving.server import ServeOptions

    parser = argparse.ArgumentParser(prog="arc-edge", description="Serve ARC cache bundles on this device, offline.",
                                     formatter_class=fmt)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", formatter_class=fmt, help="serve bundles over gRPC")
    add_flags(serve, ServeOptions)  # every flag from the options tree (edge_runtime/options.py), with its default

    invoke = sub.add_parser("invoke", formatter_class=fmt, help="ask a running server one question",
                            epilog=f"exit status: 0 HIT, {EXIT_MISS} MISS, 2 error")
    invoke.add_argument("question")
    invoke.add_argument("--to", default="127.0.0.1:50551")
    invoke.add_argument("--timeout", type=float, default=10.0)
    invoke.add_argument("--json", action="store_true")

    push = sub.add_parser("push", formatter_class=fmt, help="push a bundle (and the model blobs the device lacks) to a server")
    push.add_argument("bundle", type=Path)
    push.add_argument("--to", default="127.0.0.1:50551")
    push.add_argument("--model", type=Path, default=None, help="target-model artefact dir to push missing blobs from")
    push.add_argument("--blobs", type=Path, default=None,
                      help="directory of the bundle's out-of-line blobs (routing table, tokenizer), one <sha256> file "
                           "each, as arc-build writes it (default: blobs/ beside the bundle)")
    push.add_argument("--activate", action="store_true")
    for name, text in (("activate", "activate a staged bundle (a version higher than any activated before)"),
                       ("rollback", "go back to an older held bundle of the active name"),
                       ("list", "list the bundles held on a device"), ("stats", "print a device's counters")):
        command = sub.add_parser(name, help=text)
        if name == "activate":
            command.add_argument("bundle_id", help="NAME-VERSION, as push printed it")
        if name == "rollback":
            command.add_argument("bundle_id", nargs="?", default="", help="an older held bundle (default: the newest older one)")
        if name in ("list", "stats"):
            command.add_argument("--to", default="127.0.0.1:50551")
    for command in (push, *(sub.choices[n] for n in ("activate", "rollback", "list", "stats"))):
        command.add_argument("--admin-address", default=None, help="admin TCP HOST:PORT (mutual TLS; needs the three cert flags)")
        command.add_argument("--ca", type=Path, default=None, help="CA certificate of the device (TLS)")
        command.add_argument("--cert", type=Path, default=None, help="this client's certificate (mutual TLS)")
        command.add_argument("--key", type=Path, default=None, help="this client's private key (mutual TLS)")
        command.add_argument("--admin-socket", type=Path, default=None,
                             help="the device's admin socket (default: $ARC_EDGE_DATA/admin.sock or "
                                  "~/.local/share/arc-edge/admin.sock)")
        if "--to" not in command._option_string_actions:
            command.add_argument("--to", default="127.0.0.1:50551")

    inspect = sub.add_parser("inspect", formatter_class=fmt, help="verify a bundle file and print its manifest summary")
    inspect.add_argument("bundle", type=Path)
    inspect.add_argument("--trust", type=Path, action="append", default=[])

    run = sub.add_parser("run-compiled", formatter_class=fmt, help="run one compiled entry module on parameter values",
                         epilog=RUN_COMPILED_EXAMPLE)
    run.add_argument("module", type=Path, help="a compiled entry module (.py) written by arc-build")
    run.add_argument("--params", required=True, help="JSON object of every parameter value of the entry")
    run.add_argument("--model", type=Path, default=None,
                     help="target-model artefact dir (build/target-models/<hash>) for entries whose steps ask the model")
    return parser


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)

    from edge_runtime.errors import ArcError

    try:
        return _COMMANDS[args.command](args)
    except ArcError as exc:
        print(f"arc-edge: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file named on the command line is missing or unreadable
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"arc-edge: {where}{exc.strerror or exc}; check the path", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from edge_runtime.errors import BundleError
    from edge_runtime.flags import from_flags
    from edge_runtime.serving.runtime import EdgeRuntime
    from edge_runtime.serving.server import ServeOptions, TlsFiles, listen_address, serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    tree = from_flags(ServeOptions, args)
    server, options = tree.server, tree.runtime
    if (server.tls_cert is None) != (server.tls_key is None):
        print("arc-edge: TLS needs both --tls-cert and --tls-key", file=sys.stderr)
        return 2
    tls = TlsFiles(server.tls_cert, server.tls_key, server.client_ca) if server.tls_cert else None
    follow = _follow_options(args, tree.follow)
    if options.upstream is not None:
        from edge_runtime.serving.upstream import AnthropicUpstream

        AnthropicUpstream(options.upstream)  # refuse a missing key or SDK before any state is written
    if server.model or server.bundles:
        setup = EdgeRuntime(replace(options, use_worker_pool=False, upstream=None))
        if server.model:
            setup.blobs.import_target_model(server.model)
        for path in server.bundles:
            try:
                bundle, missing = setup.stage_bundle(path.read_bytes())
            except BundleError as exc:
                raise type(exc)(str(exc).replace("the pushed bundle", str(path))) from None
            setup.blobs.import_from_dir(path.parent / "blobs", missing)  # what arc-build wrote beside the bundle
            missing = setup.blobs.missing(missing)
            if missing:
                print(f"arc-edge: {path}: {_missing_blobs_message(bundle, missing, server.model)}", file=sys.stderr)
                return 2
            setup.activate(f"{bundle.name}-{bundle.version}")
        setup.close()
    serve(options, address=listen_address(server.address, server.port), metrics_port=server.metrics_port,
          admin_socket=server.admin_socket, admin_address=server.admin_address, tls=tls,
          reflection_on=server.reflection, follow=follow)
    return 0


def _follow_options(args: argparse.Namespace, follow: FollowOptions | None) -> FollowOptions | None:
    """The tree's ``--follow`` branch (None without --follow), once it is whole; refuses half a configuration."""
    from edge_runtime.errors import ArcError

    if follow is None:
        if args.tuf_root is not None or args.upload_misses:
            raise ArcError("--tuf-root and --upload-misses go with --follow REGISTRY/REPO")
        return None
    if follow.tuf_root is None or not follow.tuf_root.is_file():
        raise ArcError(f"--follow needs --tuf-root ROOT.json, the fleet's root metadata (arc-build tuf init printed "
                       f"its path){'' if follow.tuf_root is None else f'; {follow.tuf_root} does not exist'}")
    from edge_runtime.fleet.media import Reference

    try:
        Reference.parse(follow.reference)
    except ValueError as exc:
        raise ArcError(f"--follow: {exc}") from None
    return follow


def _missing_blobs_message(bundle: object, missing: list[str], model_dir: Path | None) -> str:
    """Name the blob the bundle expects and, when --model was given, the one that artefact holds instead."""
    first = missing[0]
    for path, ref in bundle.blobs.items():
        if ref["sha256"] == first:
            return (f"needs blob {first} ({path}), which is not in the blobs/ directory beside it; "
                    f"rebuild it with arc-build bundle, which writes that directory")
    wanted = {f["sha256"]: f["path"] for f in bundle.target_model["files"]}
    text = f"needs {len(missing)} target-model blob(s) the device lacks, e.g. {wanted.get(first, '?')} sha256 {first[:16]}"
    if model_dir is None:
        return text + "; pass --model build/target-models/<hash> (the artefact the bundle was built with)"
    import hashlib

    name = wanted.get(first)
    held = name and (model_dir / name).is_file()
    found = hashlib.sha256((model_dir / name).read_bytes()).hexdigest()[:16] if held else "no such file"
    return f"{text}, but --model {model_dir} has {found} for {name}; pass the artefact the bundle was built with"


def _invoke(args: argparse.Namespace) -> int:
    import grpc

    from edge_runtime.serving.client import EdgeClient, decode

    with EdgeClient(args.to, timeout_s=args.timeout) as client:
        try:
            response = decode(client.invoke(args.question))
        except grpc.RpcError as exc:
            print(f"arc-edge: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(response))
    elif response["outcome"] == "HIT":
        for i, text in enumerate(response["narration"], 1):
            print(f"{i}. {text}")
        print(f"answer: {response['answer'] if response['answer'] is not None else response['result']}")
        print(f"[{response['entry_id']} ({response['verification']}) via {response['serving_path']}, "
              f"{response['timings_ms']['total']:.1f} ms]")
    else:
        print(f"MISS ({response['miss_reason']}): {response['miss_detail']}")
        upstream = response["upstream"]
        if upstream:
            print(f"upstream {upstream['model']}: {upstream['text'] or 'no answer (' + upstream['error'] + ')'}")
    return 0 if response["outcome"] == "HIT" else EXIT_MISS


def _push(args: argparse.Namespace) -> int:
    import grpc

    from edge_runtime.errors import BlobStoreError, BundleError

    if not args.bundle.is_file():
        what = "is a directory" if args.bundle.is_dir() else "does not exist"
        raise BundleError(f"{args.bundle}: {what}; pass a bundle file (.arcb) such as build/bundles/examples-1.arcb")
    if args.model is not None and not (args.model / "manifest.json").is_file():
        what = "does not exist" if not args.model.exists() else "is not a target-model artefact (no manifest.json)"
        raise BlobStoreError(f"{args.model}: {what}; pass a directory under build/target-models/")
    with _admin_client(args) as client:
        try:
            pushed = client.push(args.bundle, model_dir=args.model, blob_dir=args.blobs)
            staged = pushed.staged
            if args.model:
                print(f"pushed {len(pushed.model_blobs_sent)} model blob(s)")
            sent = sum((args.blobs or args.bundle.parent / "blobs").joinpath(s).stat().st_size for s in pushed.blobs_sent)
            print(f"staged {staged.bundle_id} ({staged.entries} entries, digest {staged.digest[:12]}, "
                  f"{args.bundle.stat().st_size} bytes); pushed {len(pushed.blobs_sent)} blob(s), {sent} bytes")
            if pushed.still_missing:
                print(f"arc-edge: {args.bundle}: {_still_missing_message(args, pushed.still_missing)}", file=sys.stderr)
                return 2
            if args.activate:
                status = client.activate(staged.bundle_id)
                print(f"active: {status.active} (previous: {status.previous or 'none'})")
        except grpc.RpcError as exc:
            details = (exc.details() or "").replace("the pushed bundle", str(args.bundle))
            print(f"arc-edge: {exc.code().name}: {details}", file=sys.stderr)
            return 2
    return 0


def _still_missing_message(args: argparse.Namespace, missing: list[str]) -> str:
    """Name the first blob the device still lacks, what it is, and the flag that provides it."""
    from edge_runtime.bundles.bundle import peek_blob_names

    first = missing[0]
    what = peek_blob_names(args.bundle).get(first, "?")
    text = f"the device still lacks {len(missing)} blob(s), first {first} ({what}); "
    if what.startswith("target model"):
        return text + "pass --model build/target-models/<hash> (the artefact the bundle was built with)"
    where = args.blobs or args.bundle.parent / "blobs"
    return text + (f"{where} has no file {first}: pass --blobs DIR, the blobs/ directory arc-build bundle wrote "
                   f"beside this bundle")


def _admin_client(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from edge_runtime.serving.client import EdgeClient
    from edge_runtime.serving.server import default_data_dir

    if args.admin_address:
        return EdgeClient(args.to, admin_address=args.admin_address, root_cert=args.ca, client_cert=args.cert,
                          client_key=args.key)
    return EdgeClient(args.to, admin_socket=args.admin_socket or default_data_dir() / "admin.sock", root_cert=args.ca)


def _control(args: argparse.Namespace) -> int:
    """activate / rollback / list / stats: one RPC each, errors as one line."""
    import grpc

    with _admin_client(args) as client:
        try:
            if args.command == "activate":
                status = client.activate(args.bundle_id)
                print(f"active: {status.active} (previous: {status.previous or 'none'})")
            elif args.command == "rollback":
                status = client.rollback(args.bundle_id)
                print(f"active: {status.active} (rolled back from {status.previous or 'none'})")
            elif args.command == "list":
                listing = client.list_bundles()
                for info in listing.bundles:
                    mark = "*" if info.active else " "
                    print(f"{mark} {info.bundle_id}  {info.entries} entries  digest {info.digest[:12]}  signed={info.signed}")
                if not listing.bundles:
                    print("no bundles on this device")
            else:
                from google.protobuf.json_format import MessageToDict

                print(json.dumps(MessageToDict(client.stats(), preserving_proto_field_name=True), indent=2))
        except grpc.RpcError as exc:
            print(f"arc-edge: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 2
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from edge_runtime.bundles.bundle import read_bundle
    from edge_runtime.bundles.trust import load_trusted_keys

    keys = load_trusted_keys(args.trust)
    bundle = read_bundle(args.bundle, trusted_keys=keys, allow_unsigned=not keys)
    print(json.dumps({
        "bundle": f"{bundle.name}-{bundle.version}", "digest": bundle.digest,
        "signed": bundle.signed if keys else "signature not checked (pass --trust KEY.pub)",
        "signature_checked_against_trusted_keys": bool(keys), "key_id": bundle.key_id,
        "created_at": bundle.manifest.get("created_at"), "entries": sorted(bundle.entries),
        "routing": {k: v for k, v in bundle.routing.items() if k != "calibration"},
        "target_model": (bundle.target_model or {}).get("sha256"),
    }, indent=2, default=str))
    return 0


def _run_compiled(args: argparse.Namespace) -> int:
    from edge_runtime.entries.compiler import LoadedCompiledEntry
    from edge_runtime.entries.metadata import entry_from_dict

    module = LoadedCompiledEntry(args.module.read_text(encoding="utf-8"), args.module.stem)
    try:
        raw = json.loads(args.params)
    except ValueError as exc:
        print(f"arc-edge: --params is not JSON: {exc}", file=sys.stderr)
        return 2
    target_lm = None
    if args.model is not None:
        from edge_runtime.errors import TargetModelError
        from edge_runtime.model.lm_engine import LMEngine
        from edge_runtime.model.onnx_target_lm import OnnxTargetLM

        if not (args.model / "manifest.json").is_file():
            raise TargetModelError(f"{args.model}: not a target-model artefact (no manifest.json); pass a directory "
                                   "under build/target-models/")
        target_lm = OnnxTargetLM(LMEngine(args.model))
    execution = module.run(entry_from_dict(module.meta).validate(raw), target_lm=target_lm)
    for i, step in enumerate(execution.narration, 1):
        print(f"{i}. {step.text}")
    print(json.dumps(execution.result))
    return 0


_COMMANDS = {"serve": _serve, "invoke": _invoke, "push": _push, "inspect": _inspect, "run-compiled": _run_compiled,
             "activate": _control, "rollback": _control, "list": _control, "stats": _control}


if __name__ == "__main__":
    sys.exit(main())
