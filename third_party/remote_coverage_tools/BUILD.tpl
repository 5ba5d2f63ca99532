# Offline @remote_coverage_tools: coverage post-processing is not shipped with
# lathe. `bazel coverage` fails with one clear line instead of a download.
package(default_visibility = ["//visibility:public"])

sh_binary(
    name = "coverage_report_generator",
    srcs = ["unavailable.sh"],
)

sh_binary(
    name = "lcov_merger",
    srcs = ["unavailable.sh"],
)
