// A host shared library that is not an emulated CUDA module: it exports a
// function, but no lathe_emu_bind, so the emulated driver refuses it.

extern "C" int lathe_not_a_module() { return 1; }
