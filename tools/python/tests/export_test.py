"""torch.export → lathe artifact → lathe.load (issue 29, item 4): each real
model exported with a dynamic batch (a Dim), compiled once into an artifact
that holds its weights, and called through lathe's runtime alone for three
batch sizes against eager PyTorch; the artifact's files, and the errors."""

import os
import shutil
import sys
import tempfile
import unittest

import torch
from torch.export import Dim, export

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lathe  # noqa: E402
from models import MODELS  # noqa: E402


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def export(self, name, batch=8):
        torch.manual_seed(0)
        model, inputs, _ = MODELS[name]()
        model.eval()
        ep = export(model, inputs(batch), dynamic_shapes=({0: Dim("batch", min=2, max=512)},))
        return model, inputs, ep

    def check_model(self, name):
        model, inputs, ep = self.export(name)
        path = os.path.join(self.dir, name)
        lathe.aot_compile(ep, path)
        fn = lathe.load(path)
        self.assertEqual(fn.num_arguments, 1)
        for batch in (8, 3, 33):
            x = inputs(batch)
            with torch.no_grad():
                want = model(*x)
            (got,) = fn(*x)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        self.assertEqual(fn.compiles, 0)  # the artifact's one variant; nothing compiled

    def test_the_artifact_holds_the_weights(self):
        model, inputs, ep = self.export("mlp")
        path = os.path.join(self.dir, "mlp_files")
        lathe.aot_compile(ep, path)
        with open(os.path.join(path, "manifest.txt")) as f:
            manifest = f.read()
        params = len(list(model.parameters()))
        self.assertEqual(manifest.count("\nbound "), params)
        # The Dim's range is the batch's guard.
        self.assertIn("\nguard 2 <= input_arg.size(0) <= 512\n", manifest)
        # The weights are read when the artifact is loaded: changing the
        # model afterwards changes nothing.
        fn = lathe.load(path)
        x = inputs(4)
        with torch.no_grad():
            want = model(*x)
            for p in model.parameters():
                p.zero_()
        torch.testing.assert_close(fn(*x)[0], want, rtol=1e-4, atol=1e-5)
        # A damaged weight file is refused by name.
        with open(os.path.join(path, "bound_0.npy"), "r+b") as f:
            f.seek(-4, os.SEEK_END)
            f.write(b"\0\0\0\1")
        with self.assertRaises(lathe.Error) as e:
            lathe.load(path)
        self.assertIn("bound_0.npy: damaged", str(e.exception))

    def test_errors(self):
        _, inputs, ep = self.export("mlp")
        path = os.path.join(self.dir, "mlp_errors")
        lathe.aot_compile(ep, path)
        fn = lathe.load(path)
        with self.assertRaises(lathe.Error) as e:
            fn(*inputs(4), inputs(4)[0])
        self.assertIn("expected 1 arguments (the artifact holds 6 of its 7), got 2", str(e.exception))
        with self.assertRaises(lathe.Error) as e:
            fn(torch.randn(600, 32))
        self.assertIn("guard failed: 2 <= input_arg.size(0) <= 512", str(e.exception))
        with self.assertRaises(lathe.Error) as e:
            lathe.aot_compile(torch.nn.Linear(2, 2), path)
        self.assertIn("expected a torch.export.ExportedProgram, got Linear", str(e.exception))
        torch.manual_seed(0)
        cnn, cnn_inputs, _ = MODELS["cnn"]()
        cnn.train()  # batch norm updates its running statistics
        ep = export(cnn, cnn_inputs(4))
        with self.assertRaises(lathe.Error) as e:
            lathe.aot_compile(ep, os.path.join(self.dir, "cnn_train"))
        self.assertIn("export the model in eval mode", str(e.exception))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cnn_train")))
        with self.assertRaises(lathe.Error) as e:
            lathe.load(os.path.join(self.dir, "nowhere"))
        self.assertIn("nowhere", str(e.exception))


def _add(name):
    setattr(ExportTest, f"test_{name}", lambda self: self.check_model(name))


for _name in MODELS:
    _add(_name)


if __name__ == "__main__":
    unittest.main()
