#!/usr/bin/env bash
# mpirun.sh runs mpirun (or $MPIRUN_BIN) with the arguments given, in a session
# directory of its own, and removes it after. Open MPI 4.1 puts every job's
# session directory under one top directory per user and host in TMPDIR, and
# a job that ends may remove that top directory while another job is making
# its own ("ORTE_ERROR_LOG: ... session_dir.c"): two jobs started at once on
# one machine each need their own TMPDIR and OMPI_MCA_orte_tmpdir_base.
# The directory's name is short: Open MPI's unix sockets live in it.
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/ompi.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
TMPDIR=$dir OMPI_MCA_orte_tmpdir_base=$dir "${MPIRUN_BIN:-mpirun}" "$@"
