#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Mappings of a pprof file as "filename build-id" lines ("-" for none),
# decoded by protoc against profile.proto (an independent reader).
#
#   pprof_mappings.sh PROFILE.pb PROTO_DIR
# Exits 77 when protoc is not installed, 1 when it cannot decode.
set -u
command -v protoc >/dev/null || { echo "protoc not installed" >&2; exit 77; }
txt=$(protoc -I "$2" --decode=perftools.profiles.Profile profile.proto <"$1") ||
	exit 1
printf '%s\n' "$txt" | awk '
	/^mapping \{/ { m = 1; f = 0; b = 0; next }
	m && /^  filename:/ { f = $2 }
	m && /^  build_id:/ { b = $2 }
	m && /^}/ { m = 0; mf[++n] = f; mb[n] = b }
	/^string_table:/ {
		s = substr($0, 16); gsub(/^"|"$/, "", s); str[ns++] = s
	}
	END {
		for (i = 1; i <= n; i++)
			print str[mf[i]], mb[i] ? str[mb[i]] : "-"
	}'
