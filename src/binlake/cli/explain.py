"""``binlake explain FILE --at POS[+OFFSET]`` or ``binlake explain --hex HEX``: the command line of
:mod:`binlake.render.explain`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from binlake.cli.decode import add_decode_arguments, decode_options, decryptor_of
from binlake.cli.report import error_line, option_type
from binlake.errors import BinlogError
from binlake.render.explain import (
    HEX_SERVER,
    InPayload,
    event_at,
    explain_event,
    hex_event,
    inner_event_at,
    parse_position,
    render_json,
    render_text,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake explain``."""
    parser.add_argument("file", nargs="?", metavar="FILE", help="the binlog holding the event")
    parser.add_argument(
        "--at",
        type=option_type(parse_position),
        metavar="POS[+OFFSET]",
        help="position of the event in FILE (with --hex: the hex's position); POS+OFFSET: the event at OFFSET in the "
        "uncompressed TRANSACTION_PAYLOAD_EVENT at POS, as `binlake events` prints it (e.g. 274+71)",
    )
    parser.add_argument(
        "--hex",
        metavar="HEX",
        help="explain these bytes instead of a file's event: hex, or an xxd/hexdump dump; '-' reads stdin",
    )
    parser.add_argument(
        "--server-version",
        help=f"with --hex: the server that wrote the event (default {HEX_SERVER}; a '-MariaDB' version for MariaDB)",
    )
    parser.add_argument("--no-checksum", action="store_true", help="with --hex: the event has no CRC32 at its end")
    parser.add_argument(
        "--rows",
        type=_row_limit,
        default=3,
        metavar="N",
        help="a rows event: explain the first N row changes value by value (default 3; 'all': every one)",
    )
    parser.add_argument("--json", action="store_true", help="print the explanation as one JSON object")
    add_decode_arguments(parser, on_error=False)  # one event is explained, with its error: there is nothing to skip


def _row_limit(text: str) -> int | None:
    """``--rows``: a count of row changes, or ``all`` (``None``)."""
    if text == "all":
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of rows or 'all', not {text!r}")
    return int(text)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``binlake explain``; return 0, or 2 when the event has a problem (its explanation is still printed)."""
    out = sys.stdout if out is None else out
    source: str | None = args.file
    place: InPayload | None = None
    usage = _usage_error(args)
    if usage is not None:
        raise BinlogError(usage)
    try:
        options = decode_options(args)
        if args.hex is not None:
            text = sys.stdin.read() if args.hex == "-" else args.hex
            raw, pos, ctx = hex_event(text, options, server_version=args.server_version, checksum=not args.no_checksum)
            if args.at is not None:
                if args.at[1] is not None:
                    raise ValueError(
                        "--at POS+OFFSET addresses an event inside a transaction payload of FILE; not with --hex"
                    )
                pos = args.at[0]
            source = None
        else:
            pos, offset = args.at
            decryptor = decryptor_of(args)
            if offset is None:
                raw, ctx = event_at(args.file, pos, options, decryptor)
            else:
                raw, ctx, place = inner_event_at(args.file, pos, offset, options, decryptor)
                pos = offset
        ex = explain_event(raw, pos, ctx, place, args.rows)
    except BinlogError as e:  # (the command line prints it, naming the file)
        raise (e.at_file(source) if source is not None and e.file is None else e) from None
    except ValueError as e:
        raise BinlogError(str(e)) from None
    out.write(json.dumps(render_json(ex), ensure_ascii=False) + "\n" if args.json else render_text(ex))
    if ex.error is not None:
        out.flush()
        print(error_line("explain", ex.error, source), file=sys.stderr)
        return ex.error.exit_status
    return 0


def _usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of arguments, or ``None``: some options apply to FILE, some to --hex."""
    if args.hex is None:
        if args.file is None or args.at is None:
            return "give FILE --at POS, or --hex HEX"
        hex_options = (("--server-version", args.server_version), ("--no-checksum", args.no_checksum))
        given = [name for name, value in hex_options if value]
        return f"{' and '.join(given)}: only with --hex (FILE's format description says it)" if given else None
    if args.file is not None:
        return "give FILE --at POS or --hex, not both"
    given = [name for name, value in (("--key-file", args.key_file), ("--file-key-file", args.file_key_file)) if value]
    return f"{' and '.join(given)}: only with FILE (an encrypted event needs its log's nonce)" if given else None
