"""The `punctkit` command: one thin subcommand per stage over the library.

This is the only module that imports typer. Each command parses its options,
calls one library function and prints a short summary; errors the user can fix
(`PunctkitError`) are printed as one line and exit with status 1.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from punctkit.files import PunctkitError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Punctuation and casing restoration for speech transcripts (Kaldi/ESPnet-style stages).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


ENCODING = typer.Option(None, help="text encoding of the inputs, e.g. latin-1 "
                                   "(default: UTF-8, or UTF-16/32 by its BOM)")


def _lines_opt(spec: Optional[str]) -> Optional[tuple[int, int]]:
    if not spec:
        return None
    a, _, b = spec.partition(":")
    try:
        return int(a or 1), int(b) if b else 10**12
    except ValueError:
        raise PunctkitError(f"--lines expects FIRST:LAST, got '{spec}'") from None


# ------------------------------------------------------------------ data preparation

@app.command()
def convert(
    src: Path = typer.Argument(..., help="input file or data directory"),
    dst: Path = typer.Argument(..., help="output file or data directory"),
    from_fmt: Optional[str] = typer.Option(None, "--from", help="twocol|punctuator2|text|kaldi_text|datadir (detected when omitted)"),
    to_fmt: Optional[str] = typer.Option(None, "--to", help="output format (default: text, or datadir for a dir/)"),
    inventory: Optional[str] = typer.Option(None, help="label inventory (default: inferred; 4class for text)"),
    encoding: Optional[str] = ENCODING,
) -> None:
    """Convert punctuated data between formats."""
    from punctkit.data.formats import convert as do_convert

    n, w = do_convert(src, dst, from_fmt, to_fmt, inventory, encoding)
    typer.echo(f"convert: {n} utterances, {w} words -> {dst}", err=True)


@app.command()
def prepare(
    inputs: List[Path] = typer.Argument(..., help="punctuated text files (any format)"),
    out: Path = typer.Option(..., "--out", "-o", help="data directory to write"),
    fmt: Optional[str] = typer.Option(None, "--from", help="input format (detected when omitted)"),
    inventory: str = typer.Option("4class", help="4class | 6class | case4 | case6"),
    rules: Optional[Path] = typer.Option(None, help="YAML substitution rules (default: Faber 2020 table)"),
    lowercase: bool = typer.Option(False, help="lower-case every word"),
    rechunk: Optional[str] = typer.Option(None, help="rechunk lengths, e.g. '25-50,50-75' or '60'"),
    block_len: Optional[int] = typer.Option(None, help="store each input as one stream of N-word blocks"),
    seed: int = typer.Option(1, help="seed for rechunking"),
    strict: bool = typer.Option(False, help="fail on the first repair instead of reporting it"),
    name: Optional[str] = typer.Option(None, help="utterance id prefix (default: the output dir name)"),
    lines: Optional[str] = typer.Option(None, help="only lines FIRST:LAST of each input"),
    encoding: Optional[str] = ENCODING,
) -> None:
    """Punctuated text -> data directory (text, labels, utt2spk), with a repair report."""
    from punctkit.data.prepare import prepare as do_prepare

    report = do_prepare(inputs, out, fmt, inventory, rules, lowercase, rechunk, block_len, seed,
                        strict, name, _lines_opt(lines), encoding)
    typer.echo("\n".join([f"prepare: {out}"] + report.lines()))


@app.command()
def stats(data: Path = typer.Argument(..., help="data directory or labelled file"),
          encoding: Optional[str] = ENCODING) -> None:
    """Print the label distribution (words, sentences, % per class)."""
    from punctkit.data.prepare import stats_table

    typer.echo(stats_table(data, encoding))


# ------------------------------------------------------------------ scoring
# (score commands)

@app.command()
def score(
    ref: Path = typer.Argument(..., help="reference (any format: file or data dir)"),
    hyp: Path = typer.Argument(..., help="hypothesis (any format: file or data dir)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of the report"),
    merge: List[str] = typer.Option([], "--map", help="merge classes before scoring, e.g. QUESTION=PERIOD (repeatable)"),
    align: bool = typer.Option(False, "--align", help="align differing word sequences (ASR output) by edit distance"),
    hyp2: Optional[Path] = typer.Option(None, "--bootstrap", help="HYP2: paired bootstrap, P(HYP beats HYP2)"),
    samples: int = typer.Option(1000, help="bootstrap samples"),
    seed: int = typer.Option(1, help="bootstrap seed"),
    block_len: Optional[int] = typer.Option(None, help="bootstrap unit: N-word blocks (default: utterances)"),
    ref_format: Optional[str] = typer.Option(None, help="REF format (detected when omitted)"),
    hyp_format: Optional[str] = typer.Option(None, help="HYP (and HYP2) format (detected when omitted)"),
    inventory: Optional[str] = typer.Option(None, help="inventory for unlabelled text inputs (case4: score casing)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="also write score.txt and score.json here"),
    encoding: Optional[str] = ENCODING,
) -> None:
    """Score HYP against REF: P/R/F1 per class and overall, SER, CER, confusion matrix."""
    from punctkit.score import format_report, score_files, to_json, write_score

    result = score_files(ref, hyp, ref_format, hyp_format, merge, align, hyp2, samples, seed,
                         inventory, block_len, encoding)
    if out is not None:
        write_score(result, out)
    typer.echo(to_json(result) if json_out else format_report(result).rstrip("\n"))

@app.command()
def results(
    exps: List[Path] = typer.Argument(..., help="experiment directories (exp/<tag>)"),
    sets: Optional[List[str]] = typer.Option(None, "--set", help="only these decoded sets (repeatable)"),
) -> None:
    """Markdown table of the experiments' scores (decode_*/score.json) and training length, for RESULTS.md."""
    from punctkit.report import collect, markdown

    typer.echo(markdown(collect(list(exps), sets)).rstrip("\n"))

# ------------------------------------------------------------------ text inputs and training
# (engine commands)

@app.command("prepare-inputs")
def prepare_inputs_cmd(
    train_dir: Path = typer.Argument(..., help="training data directory"),
    out: Path = typer.Argument(..., help="directory for frontend/ (vocabulary, BPE, ...) and w2v.txt"),
    config: Path = typer.Option(..., "--config", help="training config (its frontend: and embeddings: sections)"),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="override, e.g. frontend.merges=5000"),
) -> None:
    """Stage 3: build the vocabulary/BPE/sentencepiece model and, if asked, word2vec vectors."""
    from punctkit.train.config import load_config
    from punctkit.train.trainer import prepare_inputs

    prepare_inputs(load_config(config, set_ or []), train_dir, out, log=lambda m: typer.echo(m, err=True))


@app.command()
def train(
    config: Path = typer.Option(..., "--config", help="conf/train_*.yaml"),
    train_dir: Path = typer.Option(..., "--train-dir", help="training data directory"),
    valid_dir: Optional[Path] = typer.Option(None, "--valid-dir", help="dev data directory (best epoch, early stopping)"),
    exp: Path = typer.Option(..., "--exp", help="experiment (model) directory to write"),
    ngpu: int = typer.Option(0, help="0: CPU, 1: the first CUDA device, N > 1: N GPUs with DDP"),
    nproc: int = typer.Option(1, "--nproc", help="N > 1: N CPU processes with DDP (gloo), e.g. for tests"),
    resume: Optional[bool] = typer.Option(None, "--resume/--no-resume",
                                          help="resume from exp's last checkpoint (default: when there is one)"),
    inputs: Optional[Path] = typer.Option(None, "--inputs", help="stage 3's output (frontend/, w2v.txt)"),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="config override, e.g. train.lr=0.001"),
) -> None:
    """Train a model; writes config.yaml, checkpoints, model.best.pt and model.avg.pt into --exp."""
    from punctkit.train.trainer import train as do_train

    st = do_train(config, train_dir, valid_dir, exp, ngpu, resume, set_ or [], inputs, nproc=nproc)
    best = f"{st.best_score:.2f}" if st.best_score is not None else "-"
    typer.echo(f"train: {st.epoch} epochs, best dev F1 {best} (epoch {st.best_epoch}) -> {exp}")


@app.command()
def decode(
    model_dir: Path = typer.Argument(..., help="experiment dir written by punctkit train"),
    data_dir: Path = typer.Argument(..., help="data directory to punctuate (text; labels optional)"),
    out: Path = typer.Argument(..., help="output data directory or file"),
    fmt: str = typer.Option("datadir", "--format", help="datadir | twocol | punctuator2 | text | kaldi_text"),
    beam: Optional[int] = typer.Option(None, help="beam size for encoder-decoders (default: decode.beam, 6)"),
    nbest: int = typer.Option(1, help="also write N-best lists (OUT/nbest or OUT.nbest)"),
    batch_size: Optional[int] = typer.Option(None, help="windows per batch"),
    checkpoint: Optional[str] = typer.Option(None, help="model file (default model.avg.pt, model.best.pt, last epoch)"),
    window: Optional[int] = typer.Option(None, help="decoding window in words"),
    step: Optional[int] = typer.Option(None, help="window step in words"),
    ngpu: int = typer.Option(0, help="0: CPU, 1: the first CUDA device"),
    config: Optional[Path] = typer.Option(None, "--config", help="conf/decode.yaml: defaults for these options"),
) -> None:
    """Predict one label per word of a data directory."""
    from punctkit.decode.decoder import decode_dir, read_decode_config

    given = {"format": fmt if fmt != "datadir" else None, "beam": beam, "nbest": nbest if nbest != 1 else None,
             "batch_size": batch_size, "checkpoint": checkpoint, "window": window, "step": step}
    o = {**read_decode_config(config), **{k: v for k, v in given.items() if v is not None}}
    r = decode_dir(model_dir, data_dir, out, o.get("format", "datadir"), o.get("beam"), o.get("nbest", 1),
                   o.get("batch_size"), o.get("checkpoint"), ngpu, o.get("window"), o.get("step"))
    typer.echo(f"decode: {r['utterances']} utterances, {r['words']} words -> {out}", err=True)


@app.command("average-checkpoints")
def average_checkpoints_cmd(
    exp: Path = typer.Argument(..., help="experiment dir (uses history.json and checkpoints/)"),
    n: int = typer.Option(5, "--n", help="average the N epochs with the best dev F1"),
    out: Optional[Path] = typer.Option(None, help="output file (default EXP/model.avg.pt)"),
    checkpoints: Optional[List[Path]] = typer.Option(None, "--checkpoint", help="average these files instead"),
) -> None:
    """Average model checkpoints (the best N epochs by dev F1, or the files given)."""
    from punctkit.train.checkpoint import average_named

    paths = average_named(exp, n, out, checkpoints or None)
    typer.echo(f"average-checkpoints: {len(paths)} checkpoints -> {out or exp / 'model.avg.pt'}", err=True)


bpe_app = typer.Typer(help="Sub-word models: subword-nmt BPE or sentencepiece (bpe/unigram).", no_args_is_help=True)
app.add_typer(bpe_app, name="bpe")


@bpe_app.command("train")
def bpe_train(
    data_dir: Path = typer.Argument(..., help="data directory whose text is learnt from"),
    out: Path = typer.Argument(..., help="directory for the codes/model and vocabulary"),
    kind: str = typer.Option("subword_nmt", help="subword_nmt | sentencepiece"),
    merges: int = typer.Option(10000, help="subword_nmt: merge operations"),
    vocab_size: int = typer.Option(8000, help="sentencepiece: vocabulary size"),
    model_type: str = typer.Option("bpe", help="sentencepiece: bpe | unigram"),
) -> None:
    """Learn BPE codes (subword-nmt) or a sentencepiece model from a data dir's text."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.text.frontend import train_frontend

    opts = {"subword_nmt": {"merges": merges}, "sentencepiece": {"vocab_size": vocab_size, "model_type": model_type}}
    if kind not in opts:
        raise PunctkitError(f"--kind must be subword_nmt or sentencepiece, not '{kind}'")
    sents = [u.words for u in read_data_dir(data_dir, need_labels=False).utterances]
    fe = train_frontend({"kind": kind, **opts[kind]}, sents, out)
    typer.echo(f"bpe train: {kind}, {fe.vocab_size} tokens -> {out}", err=True)


@bpe_app.command("apply")
def bpe_apply(
    model: Path = typer.Argument(..., help="directory written by `bpe train` (or a model's frontend/)"),
    src: Path = typer.Argument(..., help="data directory (its text) or a text file of words"),
    out: Optional[Path] = typer.Argument(None, help="output file (default: standard output)"),
) -> None:
    """Print (or write) the pieces of every line."""
    from punctkit.files import atomic_write
    from punctkit.text.frontend import load_frontend, piece_lines

    lines = piece_lines(load_frontend(model), src)
    if out is None:
        for ln in lines:
            typer.echo(ln)
        return
    with atomic_write(out) as f:
        f.writelines(ln + "\n" for ln in lines)


@app.command("w2v-train")
def w2v_train(
    data_dir: Path = typer.Argument(..., help="data directory whose text is learnt from"),
    out: Path = typer.Argument(..., help="vectors file to write (word2vec text format)"),
    dim: int = typer.Option(50, help="vector size"),
    window: int = typer.Option(5, help="context window"),
    epochs: int = typer.Option(5, help="passes over the text"),
    min_count: int = typer.Option(1, help="ignore rarer words"),
    seed: int = typer.Option(1, help="random seed"),
    workers: int = typer.Option(1, help="threads (1 is reproducible)"),
) -> None:
    """Train skip-gram word2vec (gensim) on a data dir's text, as Faber 2020."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.text.embeddings import train_word2vec

    sents = [u.words for u in read_data_dir(data_dir, need_labels=False).utterances]
    n = train_word2vec(sents, out, dim, window, epochs, min_count, seed, workers)
    typer.echo(f"w2v-train: {n} words, dim {dim} -> {out}", err=True)

# ------------------------------------------------------------------ data directories and cluster
# (cluster commands)

@app.command("split-data")
def split_data(
    data: Path = typer.Argument(..., help="data directory to split"),
    n: int = typer.Argument(..., help="number of parts"),
    per_spk: bool = typer.Option(False, "--per-spk", help="keep each speaker's utterances in one part"),
) -> None:
    """Split a data directory into DATA/splitN/1..N (every per-utterance file kept consistent)."""
    from punctkit.data.datadir import split_data_dir

    parts = split_data_dir(data, n, per_spk)
    typer.echo(f"split-data: {data} -> {parts[0].parent}/{{1..{n}}}", err=True)


@app.command("combine-data")
def combine_data(
    out: Path = typer.Argument(..., help="data directory to write"),
    dirs: List[Path] = typer.Argument(..., help="data directories to merge"),
) -> None:
    """Merge data directories into OUT (sorted; spk2utt regenerated)."""
    from punctkit.data.datadir import combine_data_dirs

    for w in combine_data_dirs(out, dirs):
        typer.echo(f"combine-data: warning: {w}", err=True)
    typer.echo(f"combine-data: {len(dirs)} directories -> {out}", err=True)

# ------------------------------------------------------------------ audio
# (acoustic commands)

@app.command("validate-data-dir")
def validate_data_dir_cmd(data: Path = typer.Argument(..., help="data directory")) -> None:
    """Check a data directory as Kaldi's validate_data_dir.sh does; one line per problem."""
    from punctkit.feats.validate import validate_data_dir

    problems = validate_data_dir(data)
    for p in problems:
        typer.echo(p)
    if problems:
        raise PunctkitError(f"{data}: {len(problems)} problem(s)")
    typer.echo(f"validate-data-dir: {data} is valid", err=True)


@app.command("extract-feats")
def extract_feats_cmd(
    data: Path = typer.Argument(..., help="audio data directory (wav.scp [, segments])"),
    featdir: Path = typer.Argument(..., help="where the ark/scp files go"),
    fbank_conf: Optional[Path] = typer.Option(None, help="Kaldi-style fbank options (e.g. conf/fbank.conf)"),
    pitch_conf: Optional[Path] = typer.Option(None, help="Kaldi-style pitch options (e.g. conf/pitch.conf)"),
    kind: str = typer.Option("fbank_pitch", help="fbank_pitch | fbank | pitch"),
    nj: int = typer.Option(1, help="number of parts"),
    job: Optional[int] = typer.Option(None, help="compute only part JOB of NJ (merge later with --merge)"),
    subsample: int = typer.Option(3, help="frame subsampling factor, stored in DATA/feats.info"),
    skip_bad: bool = typer.Option(False, help="log bad utterances and go on (default: stop)"),
    merge: bool = typer.Option(False, help="only merge the NJ parts into DATA/feats.scp"),
) -> None:
    """Fbank + Kaldi pitch features (kaldi-native-fbank) into FEATDIR, DATA/feats.scp, utt2num_frames."""
    from punctkit.feats.fbank_pitch import extract_feats

    s = extract_feats(data, featdir, fbank_conf, pitch_conf, kind=kind, nj=nj, job=job, subsample=subsample,
                      skip_bad=skip_bad, merge_only=merge)
    if merge:
        typer.echo(f"extract-feats: merged {s.utterances} utterances into {data / 'feats.scp'}", err=True)
        return
    typer.echo(f"extract-feats: {s.utterances} utterances, {s.frames} frames, {s.seconds / 3600:.3f} h"
               f"{f', {len(s.bad)} skipped (see {featdir}/log)' if s.bad else ''}", err=True)


@app.command("compute-cmvn")
def compute_cmvn_cmd(
    data: Path = typer.Argument(..., help="data directory with feats.scp"),
    per_spk: bool = typer.Option(False, help="stats per speaker (utt2spk) instead of global"),
) -> None:
    """Kaldi cmvn stats (2 x (D+1)) into DATA/cmvn.ark and DATA/cmvn.scp."""
    from punctkit.feats.cmvn import compute_cmvn

    n = compute_cmvn(data, per_spk)
    typer.echo(f"compute-cmvn: {n} {'speakers' if per_spk else 'global'} stats -> {data / 'cmvn.scp'}", err=True)


@app.command()
def synthesize(
    src: Path = typer.Argument(..., help="data directory with text and labels"),
    out: Path = typer.Argument(..., help="audio data directory to write"),
    wav_dir: Optional[Path] = typer.Option(None, help="where the wavs go (default: OUT_wav)"),
    seed: int = typer.Option(1, help="seed choosing each utterance's voice and rate"),
    nj: int = typer.Option(1, help="parallel synthesis processes"),
    voices: str = typer.Option(",".join(("en-us", "en", "en+f3", "en-us+m3", "en+f4")), help="espeak-ng voices"),
    rates: str = typer.Option("150,165,180,195", help="speaking rates (words per minute)"),
) -> None:
    """Speak punctuated text with espeak-ng: 16 kHz wavs, wav.scp and an exact word CTM."""
    from punctkit.feats.synth import synthesize_data_dir

    try:
        rate_list = tuple(int(r) for r in rates.split(","))
    except ValueError:
        raise PunctkitError(f"--rates expects comma-separated integers, got '{rates}'") from None
    n, sec = synthesize_data_dir(src, out, wav_dir, seed, nj, tuple(voices.split(",")), rate_list)
    typer.echo(f"synthesize: {n} utterances, {sec / 3600:.3f} h -> {out}", err=True)


# ------------------------------------------------------------------ packed models
# (punctuate commands)

@app.command()
def pack(
    exp_dir: Path = typer.Argument(..., help="trained model directory (exp/NAME)"),
    out: Path = typer.Option(..., "--out", "-o", help="packed model file to write (model.pkt)"),
    checkpoint: Optional[str] = typer.Option(None, help="checkpoint in EXP_DIR (default: model.avg.pt, model.best.pt, last epoch)"),
    card_results: Optional[List[Path]] = typer.Option(None, "--card-results", help="score.json to quote on the card (repeatable)"),
    train_data: Optional[str] = typer.Option(None, help="training data named on the card (default: from train.log)"),
    onnx: bool = typer.Option(False, help="add the tagger as an ONNX graph: punctuate then runs it with "
                                          "onnxruntime, without torch (pip install 'punctkit[onnx]')"),
    int8: bool = typer.Option(False, help="with --onnx: int8 weights in the ONNX graph (faster on CPU; "
                                          "labels may differ slightly)"),
) -> None:
    """Pack a trained model (weights, frontend, config, labels, card) into one file."""
    from punctkit.punctuator import pack as do_pack

    card = do_pack(exp_dir, out, checkpoint, card_results or [], train_data, onnx, int8)["card"]
    typer.echo(f"pack: {exp_dir} ({card['model']}, {card['inventory']}, {card['checkpoint']}) -> {out}", err=True)


@app.command()
def punctuate(
    src: str = typer.Argument("-", help="input file, or - for standard input"),
    model: Path = typer.Option(..., "--model", "-m", help="packed model (punctkit pack)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="output file (default: standard output)"),
    input_format: Optional[str] = typer.Option(None, "--input-format", help="text | kaldi_text | ctm | jsonl (default: detected from the content)"),
    encoding: Optional[str] = ENCODING,
    fmt: str = typer.Option("readable", "--format", help="readable | ctm | jsonl | text | kaldi_text | twocol | punctuator2 | datadir"),
    keep_input_marks: bool = typer.Option(False, help="keep the marks the input has; predict only the other slots"),
    capitalize: bool = typer.Option(True, "--capitalize/--no-capitalize", help="capitalise sentence starts and 'I' (models without case labels)"),
    threads: int = typer.Option(0, help="CPU threads (0: the backend's default)"),
    batch_size: Optional[int] = typer.Option(None, help="windows per batch (default: max(config's, 64))"),
    beam: Optional[int] = typer.Option(None, help="beam size for encoder-decoders (default: the config's)"),
    chunk_words: int = typer.Option(10000, help="words decoded at once (bounds memory)"),
    step: Optional[int] = typer.Option(None, help="words between windows (default: the packed config's; "
                                                  "up to the window: fewer windows, faster)"),
    quantize: bool = typer.Option(False, help="int8 weights for Linear/GRU/LSTM layers (CPU): faster, "
                                              "labels may differ slightly"),
    ngpu: int = typer.Option(0, help="0: CPU, 1: the first CUDA device"),
    backend: str = typer.Option("auto", help="torch | onnx (models packed with --onnx) | auto: onnx when "
                                             "the model has it and onnxruntime is installed"),
) -> None:
    """Restore punctuation (and casing) in text, Kaldi text, CTM or JSON-lines ASR output."""
    from punctkit.punctuator import Punctuator, punctuate_file

    punct = Punctuator.load(model, ngpu, threads, batch_size, beam, chunk_words, step, quantize, backend)
    stats = punctuate_file(punct, src, out, input_format, fmt, keep_input_marks, capitalize, encoding)
    typer.echo(f"punctuate: {stats.summary()}", err=True)



def main() -> None:
    """Entry point: run the app, turning PunctkitError into a one-line message."""
    try:
        app(standalone_mode=False)
    except PunctkitError as e:
        typer.echo(f"punctkit: error: {e}", err=True)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("punctkit: aborted", err=True)
        sys.exit(130)
    except Exception as e:  # click usage errors come here in non-standalone mode
        import click

        if isinstance(e, click.exceptions.Exit):
            sys.exit(e.exit_code)
        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise


if __name__ == "__main__":
    main()
