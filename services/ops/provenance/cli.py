"""``onsei takedown``: record a takedown request, list them, or check a published export."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import click

from services.ops.options import output_option, output_settings
from services.ops.provenance.requests import Kind

KINDS: dict[str, Kind] = {"source": "source", "key": "key", "voice": "voice"}


@click.command()
@output_option()
@click.option("--source", default=None, help="a source URL or id, as the metadata gave it")
@click.option("--key", "key", default=None,
              help="an input key: KEY (every shard) or KEY@SHARD (000012)")
@click.option("--voice", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="an audio sample of the person: matched to corpus speakers")
@click.option("--threshold", default=None, type=click.FloatRange(0.0, 1.0, min_open=True,
              max_open=True), help="--voice: cosine to a corpus speaker's centroid at or above "
              "which it is the voice (default: ONSEI_SPEAKERS_LINK_THRESHOLD)")
@click.option("--reason", default=None, help="why (the request's text, kept with it)")
@click.option("--by", "by", default=None, help="who asked (default: user@host)")
@click.option("--list", "list_", is_flag=True, help="list the requests on record")
@click.option("--check", "check", default=None, metavar="EXPORT",
              help="list the lines of this published export (folder or s3:// prefix) a "
                   "request covers")
def takedown(output_url: str | None, source: str | None, key: str | None, voice: Path | None,
             threshold: float | None, reason: str | None, by: str | None, list_: bool,
             check: str | None) -> None:
    """Take a source, an input key or a voice out of every later export (append-only record
    under _ledger/takedown/; docs/provenance.md)."""
    from common.storage import open_store
    from services.ops.provenance import takedown as td
    from services.speakers.settings import SpeakersSettings
    from services.stages import open_ledger

    settings = SpeakersSettings(**output_settings(output_url))
    store = open_store(settings.output_url, settings)
    asked = [(k, v) for k, v in (("source", source), ("key", key), ("voice", voice)) if v]
    if list_ or check is not None:
        if asked:
            raise click.UsageError("--list and --check take no --source, --key or --voice")
        try:
            requests = td.requests_on_record(store)
        except ValueError as e:
            raise click.ClickException(str(e)) from None
        if list_:
            for t in requests:
                click.echo(t.to_json())
            return
        assert check is not None
        from services.ops.export.publish import MARKER

        export = open_store(check, settings)
        if not export.exists(MARKER):
            raise click.ClickException(f"--check {check}: not an onsei export (no {MARKER})")
        res = td.resolved(td.corpus_now(settings, store, open_ledger(settings, store)), requests)
        n = 0
        for c in td.check_export(export, res):
            n += 1
            click.echo(f"{c.where}\t{c.id}\t{','.join(c.requests)}")
        click.echo(f"{n} lines of {check} covered by {len(requests)} takedown requests"
                   + ("; export again to publish without them" if n else ""), err=True)
        return
    if len(asked) != 1:
        raise click.UsageError("name one of --source, --key, --voice (or --list, --check)")
    if not reason or not reason.strip():
        raise click.UsageError("--reason is required: a takedown is kept with why it was made")
    who = by or f"{getpass.getuser()}@{socket.gethostname()}"
    ledger = open_ledger(settings, store)
    corpus = td.corpus_now(settings, store, ledger)
    kind, value = asked[0]
    speakers = None
    limit = None
    embedding = None
    if kind == "voice":
        from services.ops.provenance.voice import VoiceError, embed, match

        limit = settings.speakers_link_threshold if threshold is None else threshold
        try:
            embedding = embed(Path(str(value)))
            speakers = match(settings, store, ledger, embedding, limit)
        except VoiceError as e:
            raise click.ClickException(str(e)) from None
        value = Path(str(value)).name
    t, where = td.make_request(store, corpus, KINDS[kind], str(value), who, reason.strip(),
                               speakers, limit, embedding)
    m = t.matched
    click.echo(f"takedown {t.id} recorded: {where}")
    click.echo(f"matches now: {m.keys} input keys, {len(m.speakers)} corpus speakers"
               + (f" ({', '.join(f'{s} {c:.3f}' for s, c in zip(m.speakers, m.cosines))})"
                  if m.speakers else "")
               + f", {m.near_duplicates} segments through dedup clusters")
    if not m.keys and not m.speakers:
        click.echo("warning: it matches nothing in the corpus now; every later export still "
                   "applies it (a source may arrive later)", err=True)
    click.echo("every later `onsei export` leaves these out; `onsei takedown --check DIR` "
               "lists the lines of an export already published")
