"""`opensearch-vl index`: build the offline search corpus index and the image gallery index.

Examples:
    $ opensearch-vl index build-corpus corpus.jsonl --out indexes/corpus.sqlite
    $ opensearch-vl index build-gallery photos/ --out indexes/gallery.sqlite

Point the tools at them with ``search.corpus_index`` and ``image_search.gallery_index`` in the tool config.
"""

from __future__ import annotations

import argparse
import json
import time

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``index`` command group to the ``opensearch-vl`` parser."""
    parser = subparsers.add_parser(
        "index", help="build the local search and image-gallery indexes", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="index_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    corpus = commands.add_parser(
        "build-corpus", help="index a JSONL corpus of {url, title, text} (SQLite FTS5)"
    )
    corpus.add_argument("corpus", help='JSONL file, one {"url", "title", "text"} object per line')
    corpus.add_argument("--out", required=True, help="the index file to write (replaced atomically)")
    corpus.set_defaults(func=_build_corpus)

    gallery = commands.add_parser("build-gallery", help="hash a folder of images or a JSONL manifest")
    gallery.add_argument(
        "source",
        help="a folder of images (titles from gallery.jsonl inside it, else file names) "
        'or a JSONL manifest of {"image", "title", "url", "source"}',
    )
    gallery.add_argument("--out", required=True, help="the index file to write (replaced atomically)")
    gallery.set_defaults(func=_build_gallery)


def _build_corpus(args: argparse.Namespace) -> int:
    from opensearch_vl.tools_env.backends.search_index import build_corpus_index

    start = time.perf_counter()
    count = build_corpus_index(args.corpus, args.out)
    print(
        json.dumps({"index": args.out, "documents": count, "seconds": round(time.perf_counter() - start, 3)})
    )
    return 0


def _build_gallery(args: argparse.Namespace) -> int:
    from opensearch_vl.tools_env.backends.gallery import build_gallery_index

    start = time.perf_counter()
    count = build_gallery_index(args.source, args.out)
    print(json.dumps({"index": args.out, "images": count, "seconds": round(time.perf_counter() - start, 3)}))
    return 0
