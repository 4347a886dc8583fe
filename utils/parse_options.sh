#!/usr/bin/env bash
# Kaldi-style option parsing, sourced by recipes after they set their defaults:
#   stage=1; nj=4; . utils/parse_options.sh
# `--some-opt VALUE` or `--some-opt=VALUE` sets the shell variable some_opt,
# which must already exist; a variable holding true/false only takes true/false.
# `--config FILE` sources FILE first; `--help` prints $help_message and exits 0.
# Parsing stops at the first argument that does not start with `--`; those
# arguments stay in "$@". Unknown options fail.

_po_usage() { printf '%s\n' "${help_message:-Usage: $0 [options]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) _po_usage; exit 0 ;;
    --config=*) _po_conf="${1#--config=}"; shift ;;
    --config) [ $# -ge 2 ] || { echo "$0: option --config needs a value" >&2; exit 1; }
              _po_conf="$2"; shift 2 ;;
    --*) _po_conf="" ;;
    *) break ;;
  esac
  if [ -n "${_po_conf:-}" ]; then
    [ -r "$_po_conf" ] || { echo "$0: config file not found: $_po_conf" >&2; exit 1; }
    # shellcheck disable=SC1090
    . "$_po_conf"; _po_conf=""; continue
  fi
  _po_opt="${1#--}"
  if [[ "$_po_opt" == *=* ]]; then
    _po_val="${_po_opt#*=}"; _po_opt="${_po_opt%%=*}"; shift
  else
    [ $# -ge 2 ] || { echo "$0: option --$_po_opt needs a value" >&2; exit 1; }
    _po_val="$2"; shift 2
  fi
  _po_name="${_po_opt//-/_}"
  if ! [[ "$_po_name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || [ -z "${!_po_name+set}" ]; then
    echo "$0: invalid option --$_po_opt (see $0 --help)" >&2; exit 1
  fi
  _po_old="${!_po_name}"
  if [ "$_po_old" = true ] || [ "$_po_old" = false ]; then
    if [ "$_po_val" != true ] && [ "$_po_val" != false ]; then
      echo "$0: option --$_po_opt expects true or false, got '$_po_val'" >&2; exit 1
    fi
  fi
  printf -v "$_po_name" '%s' "$_po_val"
done
unset _po_opt _po_val _po_name _po_old _po_conf
true
