"""The `punctkit` command: one thin subcommand per stage over the library.

This is the only module that imports typer. Each command parses its options,
calls one library function and prints a short summary. `main` runs the app under
punctkit/cli_errors.py's policy: every error is one line on stderr (status 2 for
usage errors, 1 for the rest); PUNCTKIT_DEBUG=1 or `--debug` adds the traceback.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional

import typer

from punctkit.cli_errors import run_cli
from punctkit.data.formats import FORMATS, READ_FORMATS, names
from punctkit.data.formats.registry import punctuate_outputs
from punctkit.data.formats.turns import TURN_FORMATS
from punctkit.data.labels import INVENTORIES
from punctkit.files import PunctkitError, shown
from punctkit.pretrained import SHIPPED, default_model
from punctkit.progress import process_seconds


def _echo(message: object = "", err: bool = False, **kwargs: Any) -> None:
    """`typer.echo`; a message on standard error has its control characters escaped (`files.shown`: it
    may quote a file name or input), what goes to standard output (results, data) is written as it is."""
    typer.echo(shown(message) if err else message, err=err, **kwargs)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Punctuation and casing restoration for speech transcripts (Kaldi/ESPnet-style stages).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from punctkit import __version__

        _echo(f"punctkit {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: bool = typer.Option(False, "--debug", help="show the traceback of an error (as PUNCTKIT_DEBUG=1), "
                                                      "for bug reports"),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                 help="print the version and exit"),
) -> None:
    if debug:
        os.environ["PUNCTKIT_DEBUG"] = "1"


# format names, from the format registry (punctkit/data/formats/registry.py)
CORPUS = " | ".join(FORMATS)
CORPUS_IN = " | ".join(READ_FORMATS)
# what prepare and convert read: the corpus formats, and the transcripts read for their turns (into a data directory)
TURNS_IN = f"{CORPUS_IN}; into a data directory of speaker turns also {' | '.join(TURN_FORMATS)}"
PUNCT_IN = " | ".join(names("units"))
PUNCT_OUT = " | ".join(punctuate_outputs())
INVENTORY_NAMES = tuple(INVENTORIES)


def _one_of(*choices: str):  # noqa: ANN202 (a click callback)
    """A callback making a value outside `choices` a usage error (exit 2) before any work."""
    def check(value: Optional[str]) -> Optional[str]:
        if value is not None and value not in choices:
            raise typer.BadParameter(f"'{value}' is not one of: {', '.join(choices)}")
        return value
    return check


ENCODING_HELP = "text encoding of the inputs, e.g. latin-1 (default: UTF-8, or UTF-16/32 by its BOM)"
ENCODING = typer.Option(None, help=ENCODING_HELP)
QUIET_HELP = "no progress bar or summary (warnings and errors still print)"

# the panels `punctuate --help` groups its options in
INPUT, OUTPUT, MODEL, DECODING, ADVANCED = "Input", "Output", "Model", "Decoding", "Advanced"


def _lines_opt(spec: Optional[str]) -> Optional[tuple[int, int]]:
    """--lines FIRST:LAST (either may be left out) -> (first, last), checked before any work."""
    if not spec:
        return None
    a, _, b = spec.partition(":")
    try:
        first, last = int(a or 1), int(b) if b else 10**12
    except ValueError:
        raise typer.BadParameter(f"expected FIRST:LAST, got '{spec}'") from None
    if not 1 <= first <= last:
        raise typer.BadParameter(f"expected 1 <= FIRST <= LAST, got '{spec}'")
    return first, last


def _chunk_spec_opt(spec: Optional[str]) -> Optional[str]:
    """--rechunk: check the lengths (e.g. '25-50,50-75') before any work."""
    from punctkit.data.prepare import parse_chunk_spec

    if spec is not None:
        try:
            parse_chunk_spec(spec)
        except PunctkitError as e:
            raise typer.BadParameter(str(e)) from None
    return spec


# ------------------------------------------------------------------ data preparation

OVERWRITE_DIR_HELP = ("write into an output directory that holds files punctkit does not write "
                      "(they are kept: punctkit never deletes a file it did not write)")
OVERWRITE_FILE_HELP = OVERWRITE_DIR_HELP + "; a file output replaces an existing file that punctkit did not write"


@app.command()
def convert(
    src: Path = typer.Argument(..., help="input file or data directory"),
    dst: Path = typer.Argument(..., help="output file or data directory"),
    from_fmt: Optional[str] = typer.Option(None, "--from", callback=_one_of(*READ_FORMATS, *TURN_FORMATS),
                                           help=f"{TURNS_IN} (detected when omitted)"),
    to_fmt: Optional[str] = typer.Option(None, "--to", callback=_one_of(*FORMATS),
                                         help=f"{CORPUS} (default: text, or datadir for a dir/)"),
    inventory: Optional[str] = typer.Option(None, callback=_one_of(*INVENTORY_NAMES),
                                            help="label inventory (default: inferred; 4class for text)"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_FILE_HELP),
    encoding: Optional[str] = ENCODING,
) -> None:
    """Convert punctuated data between formats.

    \b
    Examples:
      punctkit convert data/test test.tsv --to twocol
      punctkit convert call.nlp call.txt
      punctkit convert test.tsv data/test_copy/
    """
    from punctkit.data.formats import convert as do_convert

    n, w = do_convert(src, dst, from_fmt, to_fmt, inventory, overwrite=overwrite, encoding=encoding)
    _echo(f"convert: {n} utterances, {w} words -> {dst}", err=True)


@app.command()
def prepare(
    inputs: Optional[List[Path]] = typer.Argument(None, help="punctuated text files (any format)"),
    out: Path = typer.Option(..., "--out", "-o", help="data directory to write"),
    fmt: Optional[str] = typer.Option(None, "--from", callback=_one_of(*READ_FORMATS, *TURN_FORMATS),
                                      help=f"{TURNS_IN} (detected when omitted)"),
    inventory: str = typer.Option("4class", callback=_one_of(*INVENTORY_NAMES), help=" | ".join(INVENTORY_NAMES)),
    rules: Optional[Path] = typer.Option(None, help="YAML substitution rules (default: Faber 2020 table)"),
    lowercase: bool = typer.Option(False, help="lower-case every word"),
    rechunk: Optional[str] = typer.Option(None, callback=_chunk_spec_opt,
                                          help="rechunk lengths, e.g. '25-50,50-75' or '60'; 'sentences': "
                                               "each sentence its own unit"),
    block_len: Optional[int] = typer.Option(None, min=1, help="store each input as one stream of N-word blocks"),
    seed: int = typer.Option(1, help="seed for rechunking"),
    strict: bool = typer.Option(False, help="fail on the first repair instead of reporting it"),
    name: Optional[str] = typer.Option(None, help="utterance id prefix (default: the output dir name)"),
    lines: Optional[str] = typer.Option(None, callback=_lines_opt, help="only lines FIRST:LAST of each input"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
    encoding: Optional[str] = ENCODING,
    file_list: Optional[Path] = typer.Option(None, "--file-list", help="the inputs as 'id path' lines (instead "
                                             "of arguments); each input's utterance ids start with its id"),
    one_stream: bool = typer.Option(False, "--one-stream", help="each plain-text input is one word stream "
                                    "(its lines are parts of it), not a document a line"),
    decode_html: bool = typer.Option(False, "--decode-html", help="decode HTML entities (I&#39;m, &quot;, &amp;)"),
    drop_notes: bool = typer.Option(False, "--drop-notes", help="remove bracketed stage and sound notes "
                                    "whose text starts with a capital: (Laughter), [Music]"),
    drop_lines: Optional[str] = typer.Option(None, "--drop-lines", metavar="REGEX",
                                             help="drop the lines that match REGEX at their start, "
                                                  "e.g. '(Translator|Reviewer):'"),
    split_contractions: bool = typer.Option(False, "--split-contractions", help="split contractions as "
                                            "IWSLT's files do: don't -> do n't, it's -> it 's (not 've, 'd)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no report on standard output "
                               "(the report is in OUT/prepare.log; errors still print)"),
) -> None:
    """Punctuated text -> data directory (text, labels, utt2spk), with a repair report.

    \b
    Examples:
      punctkit prepare train.txt -o data/train --block-len 100
      punctkit prepare --file-list talks.lst -o data/train --rechunk 25-50
      punctkit prepare call.nlp -o data/call --inventory truecase4
    """
    from punctkit.data.formats.text import TextOptions, line_pattern
    from punctkit.data.prepare import prepare as do_prepare

    opts = TextOptions(decode_html, drop_notes, None if drop_lines is None else line_pattern(drop_lines),
                       split_contractions, one_stream)
    report = do_prepare(inputs or [], out, fmt=fmt, inventory=inventory, rules=rules, lowercase=lowercase,
                        rechunk_spec=rechunk, block_len=block_len, seed=seed, strict=strict, name=name, lines=lines,
                        overwrite=overwrite, encoding=encoding, text_opts=opts, file_list=file_list,
                        show_progress=not quiet)
    if not quiet:
        _echo("\n".join([f"prepare: {out}"] + report.lines()))


@app.command()
def stats(data: Path = typer.Argument(..., help="data directory or labelled file"),
          encoding: Optional[str] = ENCODING) -> None:
    """Print the label distribution (words, sentences, % per class)."""
    from punctkit.data.prepare import stats_table

    _echo(stats_table(data, encoding))


# ------------------------------------------------------------------ scoring

@app.command()
def score(
    ref: Path = typer.Argument(..., help="reference (any format: file or data dir)"),
    hyp: Path = typer.Argument(..., help="hypothesis (any format: file or data dir)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of the report"),
    merge: List[str] = typer.Option([], "--map",
                                    help="merge classes before scoring, e.g. QUESTION=PERIOD (repeatable)"),
    align: bool = typer.Option(False, "--align", help="align differing word sequences (ASR output) by edit distance"),
    hyp2: Optional[Path] = typer.Option(None, "--bootstrap", help="HYP2: paired bootstrap, P(HYP beats HYP2)"),
    samples: int = typer.Option(1000, min=1, help="bootstrap samples"),
    seed: int = typer.Option(1, help="bootstrap seed"),
    block_len: Optional[int] = typer.Option(None, min=1, help="bootstrap unit: N-word blocks (default: utterances)"),
    ref_format: Optional[str] = typer.Option(None, callback=_one_of(*READ_FORMATS),
                                             help=f"REF format: {CORPUS_IN} (detected when omitted)"),
    hyp_format: Optional[str] = typer.Option(None, callback=_one_of(*READ_FORMATS),
                                             help="HYP (and HYP2) format, as --ref-format"),
    inventory: Optional[str] = typer.Option(None, callback=_one_of(*INVENTORY_NAMES),
                                            help="inventory for unlabelled text inputs (case4: Faber's U/L case table; "
                                                 "cased words are scored for case with any)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="also write score.txt and score.json here"),
    encoding: Optional[str] = ENCODING,
) -> None:
    """Score HYP against REF: P/R/F1 per class and overall, SER, CER, confusion matrix; case and exact-form case \
F1 for a cased REF.

    \b
    Examples:
      punctkit score ref.txt hyp.txt
      punctkit score ref.txt asr_hyp.txt --align --json
      punctkit score data/test hyp.tsv --bootstrap hyp2.tsv -o score_dir
    """
    from punctkit.files import require_stdout
    from punctkit.score import format_report, score_files, to_json, write_score

    if out is None:
        require_stdout()  # the report is all it gives: fail before scoring (with -o, its files are written first)
    result = score_files(ref, hyp, ref_format=ref_format, hyp_format=hyp_format, mapping=merge, align=align,
                         hyp2_path=hyp2, samples=samples, seed=seed, inventory=inventory, block_len=block_len,
                         encoding=encoding)
    if out is not None:
        write_score(result, out)
    _echo(to_json(result) if json_out else format_report(result).rstrip("\n"))

@app.command()
def results(
    exps: List[Path] = typer.Argument(..., help="experiment directories (exp/<tag>)"),
    sets: Optional[List[str]] = typer.Option(None, "--set", help="only these decoded sets (repeatable)"),
    seeds: bool = typer.Option(False, "--seeds", help="one row per system over its seeds (exp/<system>_seed<N>): "
                                                     "mean ± standard deviation, range, epochs"),
) -> None:
    """Markdown table of the experiments' scores (decode_*/score.json) and training length, for RESULTS.md."""
    from punctkit.report import collect, markdown, markdown_by_seed

    rows = collect(list(exps), sets)
    _echo((markdown_by_seed(rows) if seeds else markdown(rows)).rstrip("\n"))

# ------------------------------------------------------------------ text inputs and training

@app.command("prepare-inputs")
def prepare_inputs_cmd(
    train_dir: Path = typer.Argument(..., help="training data directory"),
    out: Path = typer.Argument(..., help="directory for frontend/ (vocabulary, BPE, ...) and w2v.txt"),
    config: Path = typer.Option(..., "--config", help="training config (its frontend: and embeddings: sections)"),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="override, e.g. frontend.merges=5000"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Stage 3: build the vocabulary/BPE/sentencepiece model and, if asked, word2vec vectors."""
    from punctkit.config import load_config
    from punctkit.package.to_torch import package_frontend
    from punctkit.train.inputs import prepare_inputs

    conf = load_config(config, set_ or [])
    prepare_inputs(conf, train_dir, out, log=lambda m: _echo(m, err=True), overwrite=overwrite,
                   frontend=package_frontend(conf, train_dir))  # train.init's package: its frontend


@app.command()
def train(
    config: Path = typer.Option(..., "--config", help="conf/train_*.yaml"),
    train_dir: Path = typer.Option(..., "--train-dir", help="training data directory"),
    valid_dir: Optional[Path] = typer.Option(None, "--valid-dir",
                                             help="dev data directory (best epoch, early stopping)"),
    exp: Path = typer.Option(..., "--exp", help="experiment (model) directory to write"),
    ngpu: int = typer.Option(0, min=0, help="0: CPU, 1: the first CUDA device, N > 1: N GPUs with DDP"),
    nproc: int = typer.Option(1, "--nproc", min=1, help="N > 1: N CPU processes with DDP (gloo), e.g. for tests"),
    resume: Optional[bool] = typer.Option(None, "--resume/--no-resume",
                                          help="resume from exp's last checkpoint (default: when there is one)"),
    inputs: Optional[Path] = typer.Option(None, "--inputs", help="stage 3's output (frontend/, w2v.txt)"),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="config override, e.g. train.lr=0.001"),
    force: bool = typer.Option(False, "--force", help="take --exp's lock even if another run (e.g. on "
                                                     "another host) holds it"),
) -> None:
    """Train a model; writes config.yaml, checkpoints, model.best.pt and model.avg.pt into --exp."""
    from punctkit.fit import train as do_train
    from punctkit.train.ddp import leave_process, torchrun_member

    st = do_train(config, train_dir, valid_dir, exp, ngpu, resume, set_ or [], inputs, nproc=nproc, force=force)
    best = f"{st.best_score:.2f}" if st.best_score is not None else "-"
    _echo(f"train: {st.epoch} epochs, best dev F1 {best} (epoch {st.best_epoch}) -> {exp}")
    if torchrun_member():
        leave_process(0)  # a rank of a torchrun group: done, without the teardown that may abort it


@app.command()
def decode(
    model_dirs: List[Path] = typer.Argument(..., help="experiment dir written by punctkit train, or a packed "
                                                      "model (punctkit pack: run as punctuate runs it); several: "
                                                      "an ensemble (label probabilities averaged)"),
    data_dir: Path = typer.Argument(..., help="data directory to punctuate (text; labels optional)"),
    out: Path = typer.Argument(..., help="output data directory or file"),
    fmt: Optional[str] = typer.Option(None, "--format", callback=_one_of(*FORMATS),
                                      help=f"{CORPUS} (default: datadir)"),
    beam: Optional[int] = typer.Option(None, min=1, help="beam size for encoder-decoders (default: decode.beam, 6)"),
    nbest: Optional[int] = typer.Option(None, min=1, help="also write N-best lists (OUT/nbest or OUT.nbest; "
                                                          "default 1)"),
    batch_size: Optional[int] = typer.Option(None, min=1, help="windows per batch"),
    checkpoint: Optional[str] = typer.Option(None, help="model file (default model.avg.pt, model.best.pt, last epoch)"),
    window: Optional[int] = typer.Option(None, min=1, help="decoding window in words (default: the one the "
                                                            "model was trained at; a --config cannot change it)"),
    step: Optional[int] = typer.Option(None, min=1, help="window step in words"),
    stream_end: Optional[str] = typer.Option(None, "--stream-end", help="sentence: a stream's last word ends a "
                                             "sentence (default); open: streams are chunks cut anywhere, the "
                                             "model's label stays"),
    overlap: Optional[str] = typer.Option(None, "--overlap", help="a word in several windows: central (its most "
                                          "central window's prediction) or average (all of them, weighted by "
                                          "centrality; one-best); default: the model's decode section, central"),
    capital_threshold: Optional[float] = typer.Option(
        None, "--capital-threshold", help="a true-case model's capital inside a sentence: refused where the training "
        "text capitalises the word inside sentences less often than this share (0: never; default: the model's "
        "decode section, 0.1)"),
    capital_weight: Optional[float] = typer.Option(
        None, "--capital-weight", help="above 0: that capital weighed as WEIGHT x log(share) instead of refused "
        "below --capital-threshold (default: the model's decode section, 0)"),
    ngpu: int = typer.Option(0, min=0, max=1, help="0: CPU, 1: the first CUDA device"),
    config: Optional[Path] = typer.Option(None, "--config", help="conf/decode.yaml: defaults for these options "
                                                                 "(over the model's decode: section)"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_FILE_HELP),
    probs: bool = typer.Option(False, "--probs", help="also write each word's label probabilities "
                                                      "(OUT/probs or OUT.probs: uttid p,p,.. p,p,.., inventory order)"),
    weights: Optional[str] = typer.Option(None, "--weights", help="with several MODEL_DIRS: their weights "
                                                                  "(e.g. 0.6,0.4; default equal)"),
    threads: Optional[int] = typer.Option(None, "--threads", min=0, help="CPU threads (0: the library's default; "
                                                                         "default: the model's training threads)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
) -> None:
    """Predict one label per word of a data directory; the options it ran with go to
    OUT/decode_options.yaml (OUT.decode_options.yaml for a file).

    \b
    Examples:
      punctkit decode exp/drnn data/test exp/drnn/decode_test
      punctkit decode fast data/test decode_fast.tsv --format twocol
      punctkit decode exp/a exp/b data/test decode_ab --weights 0.6,0.4
    """
    from punctkit.infer.backends import passive_waits

    passive_waits()  # first: torch's OpenMP threads sleep while they wait (RESULTS.md, "Load"), if it loads
    from punctkit.decode_data import decode_dir  # torch only for an experiment or a torch package

    decode_dir(model_dirs if len(model_dirs) > 1 else model_dirs[0], data_dir, out, fmt=fmt, beam=beam, nbest=nbest,
               batch_size=batch_size, checkpoint=checkpoint, ngpu=ngpu, window=window, step=step,
               log=lambda m: _echo(m, err=True), overwrite=overwrite, config=config, probs=probs,
               weights=weights, stream_end=stream_end, threads=threads, overlap=overlap,
               capital_threshold=capital_threshold, capital_weight=capital_weight, quiet=quiet)  # logs its summary


@app.command("average-checkpoints")
def average_checkpoints_cmd(
    exp: Path = typer.Argument(..., help="experiment dir (uses history.json and checkpoints/)"),
    n: int = typer.Option(5, "--n", min=1, help="average the N epochs with the best dev F1"),
    out: Optional[Path] = typer.Option(None, help="output file (default EXP/model.avg.pt)"),
    checkpoints: Optional[List[Path]] = typer.Option(None, "--checkpoint", help="average these files instead"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out even if punctkit did not write it"),
) -> None:
    """Average model checkpoints (the best N epochs by dev F1, or the files given)."""
    from punctkit.files import check_output_file
    from punctkit.train.checkpoint import average_named

    if out is not None:  # a file the user names (EXP/model.avg.pt is the experiment's own)
        check_output_file(out, checkpoints or [], overwrite=overwrite)
    paths = average_named(exp, n, out, checkpoints or None)
    _echo(f"average-checkpoints: {len(paths)} checkpoints -> {out or exp / 'model.avg.pt'}", err=True)


bpe_app = typer.Typer(help="Sub-word models: subword-nmt BPE or sentencepiece (bpe/unigram).", no_args_is_help=True)
app.add_typer(bpe_app, name="bpe")


@bpe_app.command("train")
def bpe_train(
    data_dir: Path = typer.Argument(..., help="data directory whose text is learnt from"),
    out: Path = typer.Argument(..., help="directory for the codes/model and vocabulary"),
    kind: str = typer.Option("subword_nmt", callback=_one_of("subword_nmt", "sentencepiece"),
                             help="subword_nmt | sentencepiece"),
    merges: int = typer.Option(10000, min=1, help="subword_nmt: merge operations"),
    vocab_size: int = typer.Option(8000, min=1, help="sentencepiece: vocabulary size"),
    model_type: str = typer.Option("bpe", callback=_one_of("bpe", "unigram"), help="sentencepiece: bpe | unigram"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Learn BPE codes (subword-nmt) or a sentencepiece model from a data dir's text."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.text.frontend import train_frontend

    opts = {"subword_nmt": {"merges": merges}, "sentencepiece": {"vocab_size": vocab_size, "model_type": model_type}}
    sents = [u.words for u in read_data_dir(data_dir, need_labels=False).utterances]
    fe = train_frontend({"kind": kind, **opts[kind]}, sents, out, overwrite=overwrite)
    _echo(f"bpe train: {kind}, {fe.vocab_size} tokens -> {out}", err=True)


@bpe_app.command("apply")
def bpe_apply(
    model: Path = typer.Argument(..., help="directory written by `bpe train` (or a model's frontend/)"),
    src: Path = typer.Argument(..., help="data directory (its text) or a text file of words"),
    out: Optional[Path] = typer.Argument(None, help="output file (default: standard output)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUT even if punctkit did not write it"),
) -> None:
    """Print (or write) the pieces of every line."""
    from punctkit.files import atomic_write, check_output_file
    from punctkit.text.frontend import load_frontend, piece_lines

    if out is not None:
        check_output_file(out, [src, model, *(f for d in (src, model) if d.is_dir() for f in d.glob("*"))],
                          overwrite=overwrite)
    lines = piece_lines(load_frontend(model), src)
    if out is None:
        for ln in lines:
            _echo(ln)
        return
    with atomic_write(out) as f:
        f.writelines(ln + "\n" for ln in lines)


@app.command("w2v-train")
def w2v_train(
    data_dir: Path = typer.Argument(..., help="data directory whose text is learnt from"),
    out: Path = typer.Argument(..., help="vectors file to write (word2vec text format)"),
    dim: int = typer.Option(50, min=1, help="vector size"),
    window: int = typer.Option(5, min=1, help="context window"),
    epochs: int = typer.Option(5, min=1, help="passes over the text"),
    min_count: int = typer.Option(1, min=1, help="ignore rarer words"),
    seed: int = typer.Option(1, help="random seed"),
    workers: int = typer.Option(1, min=1, help="threads (1 is reproducible)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUT even if punctkit did not write it"),
) -> None:
    """Train skip-gram word2vec (gensim) on a data dir's text, as Faber 2020."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.files import check_output_file
    from punctkit.text.embeddings import train_word2vec

    check_output_file(out, [data_dir, *(data_dir.glob("*") if data_dir.is_dir() else ())], overwrite=overwrite)

    sents = [u.words for u in read_data_dir(data_dir, need_labels=False).utterances]
    n = train_word2vec(sents, out, dim, window, epochs, min_count, seed, workers)
    _echo(f"w2v-train: {n} words, dim {dim} -> {out}", err=True)

@app.command("s2v-train")
def s2v_train(
    data: Path = typer.Argument(..., help="audio data directory with feats.scp (+ cmvn.scp) and ctm"),
    out: Path = typer.Argument(..., help="vectors file to write (word2vec text, as embeddings: speech: reads)"),
    dim: int = typer.Option(50, min=1, help="vector size"),
    window: int = typer.Option(2, min=1, help="neighbouring words decoded on each side"),
    epochs: int = typer.Option(5, min=1, help="passes over the skip-gram pairs"),
    hidden: int = typer.Option(64, min=1, help="GRU size of encoder and decoder"),
    batch_size: int = typer.Option(64, min=1, help="pairs per step"),
    lr: float = typer.Option(0.002, min=0.0, help="Adam learning rate"),
    max_frames: int = typer.Option(50, min=1, help="frames kept of each word's segment"),
    seed: int = typer.Option(1, help="random seed"),
    threads: int = typer.Option(1, min=1, help="torch threads"),
    log: Optional[Path] = typer.Option(None, help="training log (default: OUT.log)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing OUT and log"),
) -> None:
    """Speech2Vec (Chung & Glass 2018): word vectors from the words' audio, skip-gram style."""
    from punctkit.train.s2v import S2vOptions, train_speech2vec, write_log

    log = log or out.with_name(out.name + ".log")
    for p in (out, log):
        if p.exists() and not overwrite:
            raise PunctkitError(f"{p}: exists; use --overwrite to replace it")
    opts = S2vOptions(dim, hidden, window, epochs, batch_size, lr, max_frames, seed, threads)
    res = train_speech2vec(data, out, opts, echo=lambda s: _echo(s, err=True))
    write_log(log, res.log)
    _echo(f"s2v-train: {res.types} words, dim {dim}, final loss {res.losses[-1]:.4f} -> {out} (log {log})",
               err=True)

# ------------------------------------------------------------------ data directories and cluster

@app.command("split-data")
def split_data(
    data: Path = typer.Argument(..., help="data directory to split"),
    n: int = typer.Argument(..., min=1, help="number of parts"),
    per_spk: bool = typer.Option(False, "--per-spk", help="keep each speaker's utterances in one part"),
    per_reco: bool = typer.Option(False, "--per-reco", help="keep each recording's utterances in one part: the "
                                  "streams decode reads (segments, utt2reco; else a speaker's)"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Split a data directory into DATA/splitN/1..N (every per-utterance file kept consistent)."""
    from punctkit.data.datadir import split_data_dir

    parts = split_data_dir(data, n, per_spk, overwrite=overwrite, per_reco=per_reco)
    _echo(f"split-data: {data} -> {parts[0].parent}/{{1..{n}}}", err=True)


@app.command("combine-data")
def combine_data(
    out: Path = typer.Argument(..., help="data directory to write"),
    dirs: List[Path] = typer.Argument(..., help="data directories to merge"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Merge data directories into OUT (sorted; spk2utt regenerated)."""
    from punctkit.data.datadir import combine_data_dirs

    for w in combine_data_dirs(out, dirs, overwrite=overwrite):
        _echo(f"combine-data: warning: {w}", err=True)
    _echo(f"combine-data: {len(dirs)} directories -> {out}", err=True)

# ------------------------------------------------------------------ audio

@app.command("validate-data-dir")
def validate_data_dir_cmd(data: Path = typer.Argument(..., help="data directory")) -> None:
    """Check a data directory as Kaldi's validate_data_dir.sh does; one line per problem."""
    from punctkit.feats.validate import validate_data_dir

    problems = validate_data_dir(data)
    for p in problems:
        _echo(p)
    if problems:
        raise PunctkitError(f"{data}: {len(problems)} problem(s)")
    _echo(f"validate-data-dir: {data} is valid", err=True)


# the options of a command split into NJ parts (run as Kaldi jobs, then merged)
PARTS_NJ = typer.Option(1, min=1, help="number of parts")
PARTS_JOB = typer.Option(None, min=1, help="process only part JOB of NJ (merge later with --merge)")
PARTS_MERGE = typer.Option(False, help="only merge the NJ parts into the output")


def check_part(job: Optional[int], nj: int) -> None:
    """--nj and --job as punctkit.data.jobs checks them, as a usage error (before any work)."""
    from punctkit.data.jobs import job_error

    err = job_error(nj, job)
    if err is not None:
        raise typer.BadParameter(err[1], param_hint=repr(err[0]))


@app.command("extract-feats")
def extract_feats_cmd(
    data: Path = typer.Argument(..., help="audio data directory (wav.scp [, segments])"),
    featdir: Path = typer.Argument(..., help="where the ark/scp files go"),
    fbank_conf: Optional[Path] = typer.Option(None, help="Kaldi-style fbank options (e.g. conf/fbank.conf)"),
    pitch_conf: Optional[Path] = typer.Option(None, help="Kaldi-style pitch options (e.g. conf/pitch.conf)"),
    kind: str = typer.Option("fbank_pitch", callback=_one_of("fbank_pitch", "fbank", "pitch"),
                             help="fbank_pitch | fbank | pitch"),
    nj: int = PARTS_NJ,
    job: Optional[int] = PARTS_JOB,
    subsample: int = typer.Option(3, min=1, help="frame subsampling factor, stored in DATA/feats.info"),
    skip_bad: bool = typer.Option(False, help="log bad utterances and go on (default: stop)"),
    merge: bool = PARTS_MERGE,
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Fbank + Kaldi pitch features (kaldi-native-fbank) into FEATDIR, DATA/feats.scp, utt2num_frames."""
    from punctkit.feats.fbank_pitch import extract_feats

    check_part(job, nj)
    s = extract_feats(data, featdir, fbank_conf, pitch_conf, kind=kind, nj=nj, job=job, subsample=subsample,
                      skip_bad=skip_bad, merge_only=merge, overwrite=overwrite)
    if merge:
        _echo(f"extract-feats: merged {s.utterances} utterances into {data / 'feats.scp'}", err=True)
        return
    _echo(f"extract-feats: {s.utterances} utterances, {s.frames} frames, {s.seconds / 3600:.3f} h"
               f"{f', {len(s.bad)} skipped (see {featdir}/log)' if s.bad else ''}", err=True)


@app.command("compute-cmvn")
def compute_cmvn_cmd(
    data: Path = typer.Argument(..., help="data directory with feats.scp"),
    per_spk: bool = typer.Option(False, help="stats per speaker (utt2spk) instead of global"),
) -> None:
    """Kaldi cmvn stats (2 x (D+1)) into DATA/cmvn.ark and DATA/cmvn.scp."""
    from punctkit.feats.cmvn import compute_cmvn

    n = compute_cmvn(data, per_spk)
    _echo(f"compute-cmvn: {n} {'speakers' if per_spk else 'global'} stats -> {data / 'cmvn.scp'}", err=True)


@app.command()
def synthesize(
    src: Path = typer.Argument(..., help="data directory with text and labels"),
    out: Path = typer.Argument(..., help="audio data directory to write"),
    wav_dir: Optional[Path] = typer.Option(None, help="where the wavs go (default: OUT_wav)"),
    seed: int = typer.Option(1, help="seed choosing each utterance's voice and rate"),
    nj: int = typer.Option(1, min=1, help="parallel synthesis processes"),
    voices: str = typer.Option(",".join(("en-us", "en", "en+f3", "en-us+m3", "en+f4")),
                               help="voices, one drawn per utterance: espeak-ng names, or flite:NAME"),
    rates: str = typer.Option("150,165,180,195", help="speaking rates (words per minute)"),
    engine: str = typer.Option("espeak", callback=_one_of("espeak", "flite"),
                               help="espeak | flite: the engine of voices without a prefix (flite writes no ctm: "
                                    "run punctkit align)"),
    mark_prob: str = typer.Option("", help="probability that each reference mark is spoken, e.g. "
                                           "PERIOD=0.8,QUESTION=0.8,COMMA=0.5 (default: every mark)"),
    hesitation_rate: float = typer.Option(0.0, min=0.0, max=1.0,
                                          help="probability of a comma spoken after an unmarked word (e.g. 0.04)"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Speak punctuated text with espeak-ng or flite: 16 kHz wavs, wav.scp and (espeak-ng) an exact word CTM."""
    from punctkit.feats.synth import Prosody, parse_mark_prob, synthesize_data_dir

    try:
        rate_list = tuple(int(r) for r in rates.split(","))
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got '{rates}'", param_hint="'--rates'") from None
    if min(rate_list) < 1:
        raise typer.BadParameter(f"rates must be positive words per minute, got '{rates}'", param_hint="'--rates'")
    prosody = Prosody(parse_mark_prob(mark_prob), hesitation_rate)
    n, sec = synthesize_data_dir(src, out, wav_dir, seed, nj, tuple(voices.split(",")), rate_list,
                                 overwrite=overwrite, prosody=prosody, engine=engine)
    _echo(f"synthesize: {n} utterances, {sec / 3600:.3f} h -> {out}", err=True)


@app.command()
def align(
    data: Path = typer.Argument(..., help="audio data directory with text (wav.scp [, segments]; 16 kHz)"),
    ctm: Optional[Path] = typer.Option(None, "--out", "-o", help="CTM to write (default: DATA/ctm)"),
    nj: int = PARTS_NJ,
    job: Optional[int] = PARTS_JOB,
    merge: bool = PARTS_MERGE,
    skip_bad: bool = typer.Option(False, help="log utterances that cannot be aligned and go on (default: stop)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing CTM"),
) -> None:
    """Word timings by forced alignment of DATA/text with pocketsphinx (English) -> a CTM."""
    from punctkit.align import align_data_dir

    check_part(job, nj)
    s = align_data_dir(data, ctm, nj, job, merge, skip_bad, overwrite)
    _echo(s.line(), err=True)


@app.command()
def recognize(
    data: Path = typer.Argument(..., help="audio data directory (wav.scp [, segments]; 16 kHz; text/labels: scored)"),
    out: Path = typer.Argument(..., help="data directory of recognized words to write"),
    nj: int = PARTS_NJ,
    job: Optional[int] = PARTS_JOB,
    merge: bool = PARTS_MERGE,
    skip_bad: bool = typer.Option(False, help="log utterances with no speech or no words and go on (default: stop)"),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_DIR_HELP),
) -> None:
    """Recognize speech with pocketsphinx (English): OUT gets text, ctm, projected labels, recognize.json (WER)."""
    from punctkit.recognize import recognize_data_dir

    check_part(job, nj)
    s = recognize_data_dir(data, out, nj, job, merge, skip_bad, overwrite)
    _echo(s.line(), err=True)


# ------------------------------------------------------------------ packed models

@app.command()
def pack(
    exp_dirs: List[Path] = typer.Argument(..., help="trained model directory (exp/NAME); several: an ensemble; a "
                                                    "package (or a shipped model's name): re-packed as it is "
                                                    "(its graph with this version's rewrites that keep its "
                                                    "logits), with the decoding and figures of --card-results "
                                                    "or its own"),
    out: Path = typer.Option(..., "--out", "-o", help="packed model file to write (model.pkt)"),
    checkpoint: Optional[str] = typer.Option(None, help="checkpoint in EXP_DIR (default: model.avg.pt, model.best.pt, "
                                                        "last epoch)"),
    card_results: Optional[List[Path]] = typer.Option(None, "--card-results",
                                                      help="score.json to quote on the card (repeatable)"),
    train_data: Optional[str] = typer.Option(None, help="training data named on the card (default: from train.log)"),
    onnx: bool = typer.Option(False, help="add the tagger as an ONNX graph: punctuate then runs it with "
                                          "onnxruntime, without torch (pip install 'punctkit[onnx]')"),
    int8: bool = typer.Option(False, help="with --onnx: int8 weights in the ONNX graph (faster on CPU; "
                                          "labels may differ slightly)"),
    onnx_only: bool = typer.Option(False, "--onnx-only", help="the ONNX graph without torch's weights: a smaller "
                                   "file that only onnxruntime runs (one model)"),
    card_note: Optional[List[str]] = typer.Option(None, "--card-note", help="KEY=TEXT: one more entry on the "
                                                  "card (e.g. licence=..., rebuild=...; repeatable; one model)"),
    ensemble: bool = typer.Option(False, "--ensemble", help="pack the EXP_DIRS as one ensemble (implied by "
                                                            "several EXP_DIRS): their label probabilities averaged"),
    weights: Optional[str] = typer.Option(None, "--weights", help="ensemble weights, one per EXP_DIR "
                                                                  "(e.g. 0.6,0.4; default equal)"),
    boundary: Optional[Path] = typer.Option(None, "--boundary", help="with a package: pack in how speaker turns "
                                            "and pauses weigh on its marks (recipes/ted local/fit_boundary.py's "
                                            "boundary.json)"),
) -> None:
    """Pack a trained model (weights, frontend, config, labels, card) into one file; several: an ensemble.

    \b
    Examples:
      punctkit pack exp/drnn -o drnn.pkt --card-results exp/drnn/decode_test/score.json
      punctkit pack exp/drnn --onnx --int8 -o drnn-int8.pkt
      punctkit pack exp/a exp/b --weights 0.6,0.4 -o ensemble.pkt
    """
    from punctkit.packing import pack as do_pack
    from punctkit.packing import pack_ensemble

    if ensemble or len(exp_dirs) > 1:
        for p in exp_dirs:
            if p.suffix == ".json":  # `--card-results a.json b.json`: the shell's list, the option once
                raise PunctkitError(f"{p}: a score file among the models to pack: give --card-results before "
                                    f"each one (--card-results A/score.json --card-results B/score.json)")
        if train_data or onnx_only or card_note or boundary:
            raise PunctkitError("--train-data, --onnx-only, --card-note and --boundary are for one model: "
                                "an ensemble's cards take each member's data from its train.log, "
                                "and its members keep their torch weights")
        card = pack_ensemble(exp_dirs, out, weights, checkpoint=checkpoint, card_results=card_results or [],
                             onnx=onnx, int8=int8)["card"]
        shown = ", ".join(f"{m['exp']} {w:.2f}" for m, w in zip(card["members"], card["weights"]))
        _echo(f"pack: ensemble of {len(exp_dirs)} ({card['inventory']}; {shown}) -> {out}", err=True)
        return
    if weights:
        raise PunctkitError("--weights is for an ensemble: give several EXP_DIRS (or --ensemble)")
    is_package = exp_dirs[0].is_file() or (not exp_dirs[0].exists() and str(exp_dirs[0]) in SHIPPED)
    if boundary is not None and not is_package:
        raise PunctkitError(f"--boundary is packed into a package: pack {exp_dirs[0]} first, then "
                            f"`punctkit pack MODEL.pkt --boundary {boundary} -o NEW.pkt`")
    notes = {}
    for note in card_note or []:
        key, eq, text = note.partition("=")
        if not eq or not key.strip() or not text.strip():
            raise PunctkitError(f"--card-note {note!r}: give KEY=TEXT")
        notes[key.strip()] = text.strip()
    if is_package:  # a package: re-packed with new decoding and figures
        if checkpoint or train_data or onnx or int8 or onnx_only:
            raise PunctkitError(f"{exp_dirs[0]}: a package is re-packed as it is (its weights, graph and frontend); "
                                f"--checkpoint, --train-data, --onnx, --int8 and --onnx-only are for an EXP_DIR")
        from punctkit.packing import repack
        from punctkit.pretrained import model_path

        src = exp_dirs[0] if exp_dirs[0].is_file() else model_path(str(exp_dirs[0]))
        card = repack(src, out, card_results or [], notes, boundary)["card"]
        how = "the decoding of its scores" if card_results else "its decoding and figures as they were"
        _echo(f"pack: {exp_dirs[0]} re-packed with {how} ({card['decode']}) -> {out}", err=True)
        return
    card = do_pack(exp_dirs[0], out, checkpoint, card_results or [], train_data, onnx, int8,
                   onnx_only=onnx_only, notes=notes)["card"]
    _echo(f"pack: {exp_dirs[0]} ({card['model']}, {card['inventory']}, {card['checkpoint']}) -> {out}", err=True)


@app.command()
def models(
    long: bool = typer.Option(False, "--long", "-l", help="each model's card: file, training data, licences, "
                                                          "speed, the command that rebuilds it, every figure"),
) -> None:
    """List the models shipped with punctkit (-m NAME), one line each: size, model and labels, speed, test F1
    (punctuation/case); --long: their cards."""
    from punctkit.package import read_package
    from punctkit.package.card import card_details, card_summary
    from punctkit.pretrained import DEFAULT_NAME, SHIPPED, shipped_path

    for name in SHIPPED:
        path = shipped_path(name)
        card = read_package(path).manifest.get("card", {})
        title = f"{name}{' (default)' if name == DEFAULT_NAME else ''}"
        size = f"{path.stat().st_size / 1e6:.1f} MB"
        if not long:
            _echo(f"{title}: {size}, {card_summary(card)}")
            continue
        _echo(f"{title}: {path.name}, {size}, {card.get('model', '?')} ({card.get('inventory', '?')})")
        for line in card_details(card):
            _echo(f"  {line}")


@app.command()
def formats() -> None:
    """List the formats punctkit reads and writes (the format registry): what each is, whether punctuate
    reads or writes it, and how it is detected from the content (docs/formats.md)."""
    from punctkit.data.formats.detect import detection
    from punctkit.data.formats.registry import REGISTRY

    _echo("A format given (punctuate --input-format, convert --from, ...) is obeyed; otherwise it is detected from "
          "the content:\nJSON by its keys, then a first line that names a format, then the kind of most lines "
          "(docs/formats.md).\n")
    written = punctuate_outputs()

    def roles(who: str, reads: bool, writes: bool) -> list[str]:
        return [f"{who} {' and '.join(r for r, has in (('reads', reads), ('writes', writes)) if has)}"] \
            if reads or writes else []

    for name, f in REGISTRY.items():
        what = roles("punctuate", f.units is not None, name in written) + \
            roles("convert", f.reader is not None, f.writer is not None)
        _echo(f"{name}: {'; '.join(what)}")
        _echo(f"  {f.summary}")
        told = detection(name)
        _echo(f"  detected: {told}" if told else "  an output: never read")


@app.command()
def punctuate(
    src: str = typer.Argument("-", metavar="INPUT", help="input file, or - for standard input (default)",
                              show_default=False),
    input_format: Optional[str] = typer.Option(None, "--input-format", metavar="FORMAT",
                                               callback=_one_of(*names("units")), rich_help_panel=INPUT,
                                               help="default: detected from the content (punctkit formats)"),
    encoding: Optional[str] = typer.Option(None, metavar="NAME", help=ENCODING_HELP, rich_help_panel=INPUT),
    lines: str = typer.Option("stream", "--lines", metavar="AS", callback=_one_of("stream", "turns", "documents"),
                              rich_help_panel=INPUT, show_default=False,
                              help="plain text's lines: one stream (default: sentences run across them), "
                                   "speaker turns, or documents"),
    stream: bool = typer.Option(False, "--stream", rich_help_panel=INPUT,
                                help="read words (or JSON lines: text, final) as they come, write committed "
                                     "words at once"),
    flush_on_final: bool = typer.Option(False, "--flush-on-final", rich_help_panel=INPUT,
                                        help="with --stream: a final result ends the context (the next starts "
                                             "a sentence)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", metavar="FILE", rich_help_panel=OUTPUT,
                                      help="output file (default: standard output)"),
    fmt: Optional[str] = typer.Option(None, "--format", metavar="FORMAT", callback=_one_of(*punctuate_outputs()),
                                      rich_help_panel=OUTPUT, show_default=False,
                                      help=f"{PUNCT_OUT} (default: the one -o's suffix names, .srt .vtt .ctm .stm "
                                           ".trn .nlp .jsonl; else readable)"),
    probs: bool = typer.Option(False, "--probs", rich_help_panel=OUTPUT,
                               help="add label probabilities (jsonl, timed-json, twocol)"),
    keep_input_marks: bool = typer.Option(False, "--keep-input-marks", rich_help_panel=OUTPUT,
                                          help="keep the input's marks; predict only the other slots"),
    capitalize: bool = typer.Option(True, "--capitalize/--no-capitalize", rich_help_panel=OUTPUT,
                                    show_default=False, help="set case (default), or not: marks only"),
    recase: bool = typer.Option(False, "--recase", rich_help_panel=OUTPUT,
                                help="the model's case also inside sentences of a cased input"),
    max_cue_seconds: float = typer.Option(7.0, min=0.001, metavar="S", rich_help_panel=OUTPUT, show_default=False,
                                          help="srt/vtt: a cue's longest duration (default: 7.0 seconds)"),
    max_line_chars: int = typer.Option(42, min=1, metavar="N", rich_help_panel=OUTPUT, show_default=False,
                                       help="srt/vtt: characters a line (default: 42)"),
    max_cue_lines: int = typer.Option(2, min=1, metavar="N", rich_help_panel=OUTPUT, show_default=False,
                                      help="srt/vtt: lines a cue (default: 2)"),
    overwrite: bool = typer.Option(False, "--overwrite", rich_help_panel=OUTPUT,
                                   help="replace (or write into) an output punctkit did not write"),
    quiet: bool = typer.Option(False, "--quiet", "-q", rich_help_panel=OUTPUT,
                               help=QUIET_HELP),
    model: Optional[List[Path]] = typer.Option(None, "--model", "-m", metavar="MODEL", rich_help_panel=MODEL,
                                               help="fast (default), accurate (punctkit models) or a packed model; "
                                                    "repeated: an ensemble"),
    weights: Optional[str] = typer.Option(None, "--weights", metavar="W,W", rich_help_panel=MODEL,
                                          help="ensemble weights, one per -m (default: equal, or the package's)"),
    threads: int = typer.Option(0, min=0, metavar="N", rich_help_panel=MODEL, show_default=False,
                                help="CPU threads (default 0: one a CPU; a recurrent model, one a free CPU)"),
    ngpu: int = typer.Option(0, min=0, max=1, metavar="N", rich_help_panel=MODEL, show_default=False,
                             help="0: CPU (default), 1: the first CUDA device"),
    beam: Optional[int] = typer.Option(None, min=1, metavar="N", rich_help_panel=DECODING,
                                       help="beam size for encoder-decoders (default: the model's)"),
    step: Optional[int] = typer.Option(None, min=1, metavar="N", rich_help_panel=DECODING,
                                       help="words between windows (default: the model's; up to the window: "
                                            "fewer windows, faster)"),
    lookahead: Optional[str] = typer.Option(None, metavar="L", rich_help_panel=DECODING,
                                            help="with --stream: decide each mark at most L words after it "
                                                 "(default inf: a window later)"),
    backend: str = typer.Option("auto", metavar="NAME", callback=_one_of("auto", "torch", "onnx"),
                                rich_help_panel=ADVANCED, show_default=False, help="torch | onnx | auto "
                                "(default: onnx if the model has it and onnxruntime is installed)"),
    quantize: bool = typer.Option(False, "--quantize", rich_help_panel=ADVANCED,
                                  help="int8 weights (CPU): faster, labels differ slightly (RESULTS.md)"),
    batch_size: Optional[int] = typer.Option(None, min=1, metavar="N", rich_help_panel=ADVANCED,
                                             help="windows per batch (default: the model's, 16 at most; int8: 1)"),
    chunk_words: int = typer.Option(10000, min=1, metavar="N", rich_help_panel=ADVANCED, show_default=False,
                                    help="words decoded at once: bounds memory (default: 10000)"),
) -> None:
    """Restore punctuation and case in a transcript: text, Kaldi text, CTM, stm, trn, subtitles, Rev NLP and the
    JSON of Whisper, NeMo, Vosk and the ASR services (every format `punctkit formats` lists, detected from the
    content); write it back in its own format or another. The words stay as they are: only marks and case change.

    \b
    Examples:
      punctkit punctuate talk.txt -o talk.punct.txt
      punctkit punctuate data/test/text -o text.punct
      punctkit punctuate talk.ctm -o talk.srt
    """
    from punctkit.data.formats.registry import output_format
    from punctkit.files import require_stdin, require_stdout
    from punctkit.punctuator import check_punctuate_output, punctuate_file

    if src == "-":
        require_stdin()  # before the model is loaded
    if out in (None, "-"):
        require_stdout()
    if not stream and (lookahead is not None or flush_on_final):
        raise PunctkitError("--lookahead and --flush-on-final go with --stream")
    if stream and lines != "stream":
        raise PunctkitError("--lines is for a file: --stream reads its lines as one stream (JSON lines may give "
                            "each its \"speaker\")")
    if stream and (keep_input_marks or fmt is not None or out not in (None, "-")):
        raise PunctkitError("--stream writes readable text to standard output: drop --keep-input-marks, "
                            "--format and -o")
    fmt = output_format(fmt, out)
    if not stream:
        check_punctuate_output(src, out, fmt, overwrite=overwrite, probs=probs)  # before the model is loaded
    opts = dict(ngpu=ngpu, threads=threads, batch_size=batch_size, beam=beam, chunk_words=chunk_words, step=step,
                quantize=quantize, backend=backend)
    from punctkit.infer.engine import load_model

    punct = load_model(model or [default_model()], weights or None, **opts)  # several or weights: an ensemble
    _loaded()
    casing = punct.casing(capitalize, recase)
    if stream:
        from punctkit.infer.stream import punctuate_stream

        n = punctuate_stream(punct, src, input_format, encoding, lookahead, flush_on_final, casing)
        if not quiet:
            _echo(f"punctuate: {n:,} words streamed", err=True)
        return
    stats = punctuate_file(punct, src, out, input_format=input_format, fmt=fmt, keep_input_marks=keep_input_marks,
                           casing=casing,
                           overwrite=overwrite, encoding=encoding, probs=probs, max_cue_seconds=max_cue_seconds,
                           max_line_chars=max_line_chars, max_cue_lines=max_cue_lines, show_progress=not quiet,
                           lines=lines)
    stats.total_seconds = process_seconds()
    for line in [f"warning: {w}" for w in stats.warnings()] if quiet else [stats.summary()]:
        _echo(f"punctuate: {line}", err=True)


@app.command()
def serve(
    model: Optional[Path] = typer.Option(None, "--model", "-m", help="a shipped model's name (fast: the default, "
                                         "or accurate) or a packed model "
                                         "(punctkit pack; --onnx: served without torch)"),
    host: str = typer.Option("127.0.0.1", help="address to listen on (0.0.0.0: every interface; the names "
                             "clients use must then be given to --allow-host)"),
    port: int = typer.Option(8080, min=0, max=65535, help="port (0: a free one, named in the log)"),
    max_body: str = typer.Option("1MB", "--max-body", help="largest request body (413 beyond), e.g. 1MB, 256KB"),
    batch_wait_ms: float = typer.Option(5.0, min=0, help="how long a request waits for others to share its "
                                                         "forward pass (ms)"),
    rate_limit: Optional[str] = typer.Option(None, help="N or N/s: requests a second per client address "
                                                        "(429 beyond; default: no limit)"),
    threads: int = typer.Option(0, min=0, help="CPU threads of the model (0: one a CPU this process may "
                                "use; a recurrent model, one a CPU others leave free); threads that wait sleep"),
    backend: str = typer.Option("auto", callback=_one_of("auto", "torch", "onnx"), help="torch | onnx | auto: "
                                "onnx when the model has it and onnxruntime is installed"),
    log: Optional[Path] = typer.Option(None, "--log", help="append the log (a line per request) to this file "
                                                          "(default: standard error)"),
    max_queue: int = typer.Option(64, "--max-queue", min=1, help="requests in flight at once (being read, queued "
                                  "or labelled; each open /stream websocket counts): 503 with Retry-After beyond, "
                                  "before the body is read"),
    max_queue_bytes: str = typer.Option("4MB", "--max-queue-bytes", help="their body bytes in flight (declared "
                                        "length; --max-body for a chunked or compressed body): 503 beyond; one "
                                        "request is always admitted"),
    allow_host: Optional[List[str]] = typer.Option(None, "--allow-host", help="a Host name to accept besides "
                                                   "localhost, 127.0.0.1, [::1] and --host (repeatable; * : any); "
                                                   "others get 403 (DNS rebinding guard)"),
) -> None:
    """HTTP service: POST /punctuate (any punctuate input), a page at GET /, GET /health, /model; stops on SIGTERM.

    \b
    Examples:
      punctkit serve -m fast --port 8080
      punctkit serve -m accurate --host 0.0.0.0 --allow-host punct.example.org
      curl --data-binary @talk.txt http://127.0.0.1:8080/punctuate
    """
    from punctkit.serve import ServeOptions, parse_hosts, parse_rate, parse_size  # no aiohttp: one line (extras.py)
    from punctkit.serve import serve as run
    opts = ServeOptions(host, port, parse_size(max_body), batch_wait_ms, parse_rate(rate_limit), log,
                        max_queue=max_queue, max_queue_bytes=parse_size(max_queue_bytes, "--max-queue-bytes"),
                        allow_hosts=parse_hosts(allow_host or []))
    run(model or default_model(), opts, threads, backend)


def _loaded() -> None:
    """The model is loaded: what start-up allocated (modules, the model's vocabulary, lexicon and case
    prior) lives as long as the process, so the cyclic garbage collector stops rescanning it at every
    full collection (`gc.freeze`): `punctuate` on test2011, whole process, 6 % faster."""
    import gc

    gc.freeze()


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point (`punctkit`): the app under the exit and error policy of punctkit/cli_errors.py."""
    run_cli(app, argv)


if __name__ == "__main__":
    main()
