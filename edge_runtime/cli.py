"""``arc-edge``: the device-side command line (serve, invoke, push, inspect, run-compiled)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


#: ``arc-edge invoke`` exit code when the server answered with a MISS (0 = HIT, 2 = error, 130 = Ctrl-C).
EXIT_MISS = 3


RUN_COMPILED_EXAMPLE = """example:
  arc-build compile-entries bundles/examples --out build/compiled
  arc-edge run-compiled build/compiled/ideal-gas-pressure.py --params '{"moles": 2, "temperature": 300, "temperature_unit": "kelvin", "volume": 10, "volume_unit": "litres"}'
"""


def _trusted_keys(paths: list[Path]) -> list[bytes]:
    from edge_runtime.errors import SigningKeyError

    keys = []
    for path in paths:
        if not path.is_file():
            raise SigningKeyError(f"{path}: no such public key file; pass the .pub file `arc-build keys` printed")
        text = path.read_text().strip()
        if text.startswith("-----BEGIN"):
            from cryptography.hazmat.primitives import serialization

            key = serialization.load_pem_public_key(text.encode())
            keys.append(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
        else:
            keys.append(bytes.fromhex(text))
    return keys


def main(argv: list[str] | None = None) -> int:
    """Run one ``arc-edge`` command; every error is one line on stderr with exit 2, Ctrl-C exits 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("arc-edge: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    from edge_runtime.cli_help import DefaultsHelpFormatter as fmt

    parser = argparse.ArgumentParser(prog="arc-edge", description="Serve ARC cache bundles on this device, offline.",
                                     formatter_class=fmt)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", formatter_class=fmt, help="serve bundles over gRPC")
    serve.add_argument("--bundle", type=Path, action="append", default=[], help="a bundle to stage and activate at start")
    serve.add_argument("--model", type=Path, default=None, help="target-model artefact dir to import into the blob store")
    serve.add_argument("--address", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=50551)
    serve.add_argument("--data-dir", type=Path, default=None,
                       help="staged bundles, blob store, state.json and the miss log (DIR/misses/) "
                            "(default: $ARC_EDGE_DATA or ~/.local/share/arc-edge)")
    serve.add_argument("--trust", type=Path, action="append", default=[], help="public key file of a trusted signer")
    serve.add_argument("--insecure-allow-unsigned", action="store_true", help="accept unsigned bundles (development only)")
    serve.add_argument("--threads", type=int, default=2)
    serve.add_argument("--spin", action="store_true",
                       help="let the model's threads busy-wait between operators (onnxruntime's default; off by default)")
    serve.add_argument("--model-runs", type=int, default=2,
                       help="forward passes of the model at once (1: one at a time, each with every thread)")
    serve.add_argument("--workers", type=int, default=2)
    serve.add_argument("--metrics-port", type=int, default=None,
                       help="serve Prometheus metrics on http://ADDRESS:PORT/metrics (default: off)")
    serve.add_argument("--entry-timeout", type=float, default=5.0)
    serve.add_argument("--rereads", action="store_true",
                       help="serve the aligner's draft where the model's only disagreement is an impossible reading "
                            "(more right answers on reworded questions, slower and heavier model path: docs/benchmarks.md)")
    serve.add_argument("--upstream-model", default=None,
                       help="on a MISS, also ask this source model via the anthropic SDK (off by default; key from "
                            "$ANTHROPIC_API_KEY); the reply is attached to the MISS")
    serve.add_argument("--upstream-base-url", default=None, help="Messages API base URL for --upstream-model")
    serve.add_argument("--upstream-timeout", type=float, default=20.0)
    # The control plane (docs/security.md): admin RPCs only on a 0660 Unix socket.
    serve.add_argument("--admin-socket", type=Path, default=None,
                       help="Unix socket for push/activate/rollback (mode 0660; default: DATA_DIR/admin.sock)")
    serve.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate for TLS on the query listener")
    serve.add_argument("--tls-key", type=Path, default=None, help="PEM private key for --tls-cert")
    serve.add_argument("--client-ca", type=Path, default=None, help="CA that signs admin clients' certificates (mutual TLS)")
    serve.add_argument("--admin-address", default=None, help="serve admin on TCP HOST:PORT with mutual TLS instead of the socket")
    serve.add_argument("--reflection", action="store_true", help="enable gRPC server reflection (development)")
    serve.add_argument("--accept-bundle", action="append", default=[], metavar="NAME",
                       help="accept only bundles with this name (repeatable; default: any name a trusted key signed)")
    serve.add_argument("--max-blob-bytes", type=int, default=2 << 30, help="largest pushed blob (bytes)")
    serve.add_argument("--max-blob-store-bytes", type=int, default=8 << 30, help="blob store quota (bytes)")
    serve.add_argument("--lm-max-prompt-tokens", type=int, default=512, help="cap on one entry model call's prompt")
    serve.add_argument("--lm-max-new-tokens", type=int, default=64, help="cap on one entry model call's generation")
    serve.add_argument("--lm-call-seconds", type=float, default=2.0, help="time budget of one entry model call")
    # A fleet (docs/deployment.md): follow an OCI registry whose TUF metadata names the bundle to run.
    serve.add_argument("--follow", default=None, metavar="REGISTRY/REPO",
                       help="poll this registry repository for bundles named in its TUF metadata (needs --tuf-root)")
    serve.add_argument("--tuf-root", type=Path, default=None, help="the fleet's TUF root.json (from arc-build tuf init)")
    serve.add_argument("--poll-interval", type=float, default=60.0, help="seconds between polls of --follow")
    serve.add_argument("--poll-jitter", type=float, default=0.2, help="each wait is the interval times 1 +- this")
    serve.add_argument("--upload-misses", action="store_true",
                       help="send rotated miss-log files to the followed repository (tags misslog.*)")
    serve.add_argument("--share-questions", action="store_true",
                       help="with --upload-misses, include the question text (default: its sha256, entry and reason)")
    serve.add_argument("--device-id", default="", help="this device's name in miss-log tags (default: a host-name hash)")

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
                             help="the device's admin socket (default: $ARC_EDGE_DATA/admin.sock or ~/.local/share/arc-edge/admin.sock)")
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
    args = parser.parse_args(argv)

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
    from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions
    from edge_runtime.serving.server import TlsFiles, default_data_dir, listen_address, serve
    from edge_runtime.errors import BundleError
    from edge_runtime.serving.upstream import UpstreamConfig
    from edge_runtime.model.lm_limits import LMLimits

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    options = RuntimeOptions(
        data_dir=args.data_dir or default_data_dir(), trusted_keys=_trusted_keys(args.trust),
        allow_unsigned=args.insecure_allow_unsigned, threads=args.threads, spin=args.spin, workers=args.workers,
        model_runs=args.model_runs,
        entry_timeout_s=args.entry_timeout, impossible_rereads=2 if args.rereads else None,
        upstream=UpstreamConfig(args.upstream_model, base_url=args.upstream_base_url, timeout_s=args.upstream_timeout)
        if args.upstream_model else None,
        accept_bundle_names=tuple(args.accept_bundle), max_blob_bytes=args.max_blob_bytes,
        max_blob_store_bytes=args.max_blob_store_bytes,
        lm_limits=LMLimits(args.lm_max_prompt_tokens, args.lm_max_new_tokens, args.lm_call_seconds),
    )
    if (args.tls_cert is None) != (args.tls_key is None):
        print("arc-edge: TLS needs both --tls-cert and --tls-key", file=sys.stderr)
        return 2
    tls = TlsFiles(args.tls_cert, args.tls_key, args.client_ca) if args.tls_cert else None
    follow = _follow_options(args)
    if options.upstream is not None:
        from edge_runtime.serving.upstream import AnthropicUpstream

        AnthropicUpstream(options.upstream)  # refuse a missing key or SDK before any state is written
    if args.model or args.bundle:
        setup = EdgeRuntime(RuntimeOptions(**{**options.__dict__, "use_worker_pool": False, "upstream": None}))
        if args.model:
            setup.blobs.import_target_model(args.model)
        for path in args.bundle:
            try:
                bundle, missing = setup.stage_bundle(path.read_bytes())
            except BundleError as exc:
                raise type(exc)(str(exc).replace("the pushed bundle", str(path))) from None
            setup.blobs.import_from_dir(path.parent / "blobs", missing)  # what arc-build wrote beside the bundle
            missing = setup.blobs.missing(missing)
            if missing:
                print(f"arc-edge: {path}: {_missing_blobs_message(bundle, missing, args.model)}", file=sys.stderr)
                return 2
            setup.activate(f"{bundle.name}-{bundle.version}")
        setup.close()
    serve(options, address=listen_address(args.address, args.port), metrics_port=args.metrics_port,
          admin_socket=args.admin_socket, admin_address=args.admin_address, tls=tls, reflection_on=args.reflection,
          follow=follow)
    return 0


def _follow_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """``--follow`` and its flags as FollowOptions (None without --follow); refuses half a configuration."""
    from edge_runtime.errors import ArcError

    if args.follow is None:
        if args.tuf_root is not None or args.upload_misses:
            raise ArcError("--tuf-root and --upload-misses go with --follow REGISTRY/REPO")
        return None
    if args.tuf_root is None or not args.tuf_root.is_file():
        raise ArcError(f"--follow needs --tuf-root ROOT.json, the fleet's root metadata (arc-build tuf init printed "
                       f"its path){'' if args.tuf_root is None else f'; {args.tuf_root} does not exist'}")
    from edge_runtime.fleet.follower import FollowOptions
    from edge_runtime.fleet.media import Reference

    try:
        Reference.parse(args.follow)
    except ValueError as exc:
        raise ArcError(f"--follow: {exc}") from None
    return FollowOptions(args.follow, args.tuf_root, interval_s=args.poll_interval, jitter=args.poll_jitter,
                         upload_misses=args.upload_misses, share_questions=args.share_questions,
                         device_id=args.device_id)


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
    found = hashlib.sha256((model_dir / name).read_bytes()).hexdigest()[:16] if name and (model_dir / name).is_file() else "no such file"
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

    from edge_runtime.errors import BundleError, BlobStoreError

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

    keys = _trusted_keys(args.trust)
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
            raise TargetModelError(f"{args.model}: not a target-model artefact (no manifest.json); pass a directory under build/target-models/")
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
