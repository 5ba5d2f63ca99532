"""Offline stand-in for @rules_proto//proto:defs.bzl (loaded by Bazel's tools)."""

ProtoInfo = ProtoInfo

def proto_lang_toolchain(**kwargs):
    native.proto_lang_toolchain(**kwargs)

def proto_library(**kwargs):
    native.proto_library(**kwargs)
