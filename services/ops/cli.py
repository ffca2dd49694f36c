"""The ``onsei`` command. Subcommands live in their own modules and load only when called,
so ``onsei config`` never imports a model stack."""

from __future__ import annotations

import importlib
import importlib.util
import logging

import click

# name -> "module:click command". Add a subcommand by adding a line here.
SUBCOMMANDS: dict[str, str] = {
    "config": "services.ops.config:config",
    "run": "services.ops.run:run",
    "status": "services.ops.status.command:status",
    "pack-audio": "services.ops.pack_audio:pack_audio",
    "models": "services.ops.models:models",
    "fleet": "services.ops.fleet.cli:fleet",
    "report": "services.ops.report.cli:report",
    "dedup": "services.ops.dedup:dedup",
    "speakers": "services.ops.speakers:speakers",
    "deploy": "services.ops.deploy.cli:deploy",

    "export": "services.ops.export.cli:export",
    "takedown": "services.ops.provenance.cli:takedown",
    "flower": "services.ops.flower:flower",
    "bench": "bench.__main__:bench",
}
# commands whose package the installed onsei does not hold: how to get them
OUTSIDE = {"bench": "the benchmarks are in the source checkout, not the installed package: "
                    "run `python -m bench` there"}


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        from services.ops.errors import user_errors

        # a bad setting or a missing input: one line, not a traceback (which may quote a secret)
        with user_errors(verbose=bool(ctx.params.get("verbose"))):
            return super().invoke(ctx)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not {"-h", "--help"} & set(rest):
            from services.setting_names import check_every_name

            check_every_name()  # a misspelt ONSEI_* name or config key stops every command
        return name, cmd, rest

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands this installation can run (``bench`` only beside the checkout)."""
        return sorted(n for n in SUBCOMMANDS if n not in OUTSIDE or _importable(n))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``: a command that cannot load is listed as such, the
        others still shown (each command's module is imported for its help line)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = []
        for name in names:
            try:
                cmd = self.get_command(ctx, name)
            except (click.ClickException, ImportError) as e:
                rows.append((name, f"(cannot load: {getattr(e, 'message', e)})"))
                continue
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        except ModuleNotFoundError as e:
            if e.name and (e.name == module or module.startswith(e.name + ".")):
                why = OUTSIDE.get(name, f"{module} is not installed")
                raise click.ClickException(f"`onsei {name}` is not available: {why}") from e
            raise


def _importable(name: str) -> bool:
    top = SUBCOMMANDS[name].partition(".")[0]
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


# -h as well as --help, on every subcommand too (a context passes it on to its children)
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
def cli(verbose: bool) -> None:
    """onsei: raw speech -> text + neural-codec tokens for LLM-TTS training."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from common.redact import install_log_redaction
    from services.ops.errors import current_secrets

    # no secret reaches a log line (URL passwords, keys, the secret settings' own strings)
    install_log_redaction(secrets=current_secrets())


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
