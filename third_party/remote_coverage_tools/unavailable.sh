#!/bin/sh
echo "lathe: Bazel's remote_coverage_tools are not available offline; 'bazel coverage' is unsupported" >&2
exit 1
