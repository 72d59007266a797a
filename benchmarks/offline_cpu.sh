#!/bin/sh
# The offline-engine benchmarks: speed by resolution, then two settings compared with the defaults.
# Run from the repository root with the venv active. Tables go to stdout, progress to stderr.
# Pass extra arguments (e.g. --seconds 5) on to every run.
set -eu
here=$(dirname "$0")
ffb benchmark 240p 360p 720p --engine offline "$@"
ffb benchmark 720p --engine offline --compare "$here/profiles/frame_transport_memory.ini" "$@"
ffb benchmark 720p --engine offline --compare "$here/profiles/no_keypoint_reuse.ini" "$@"
python "$here/batch_throughput.py" 720p "$@"
