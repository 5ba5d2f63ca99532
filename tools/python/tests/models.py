"""The real models the lathe package is judged on (issue 29): small, random
weights, no downloads. Each maker returns (model, make_inputs(batch),
loss(output, batch_inputs))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 10))

    def inputs(batch):
        return (torch.randn(batch, 32),)
    return model, inputs, lambda out, x: F.cross_entropy(out, torch.arange(out.shape[0]) % 10)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(x.mean((2, 3)))


def cnn():
    def inputs(batch):
        return (torch.randn(batch, 3, 16, 16),)
    return SmallCnn(), inputs, lambda out, x: F.cross_entropy(out, torch.arange(out.shape[0]) % 10)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18's shape (4 stages of 2 basic blocks), narrow: widths 8-64."""

    def __init__(self, width=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for i, w in enumerate([width, width * 2, width * 4, width * 8]):
            stride = 1 if i == 0 else 2
            layers += [BasicBlock(cin, w, stride), BasicBlock(w, w, 1)]
            cin = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18():
    def inputs(batch):
        return (torch.randn(batch, 3, 32, 32),)
    return ResNet18(), inputs, lambda out, x: F.cross_entropy(out, torch.arange(out.shape[0]) % 10)


class Block(nn.Module):
    """A pre-norm transformer block with SDPA (causal when asked)."""

    def __init__(self, dim=32, heads=4, causal=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def transformer_block():
    def inputs(batch):
        return (torch.randn(batch, 8, 32),)
    return Block(), inputs, lambda out, x: (out * out).mean()


class Gpt(nn.Module):
    """A 2-layer GPT: token and position embeddings, causal blocks, a tied
    head."""

    def __init__(self, vocab=64, dim=32, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.Sequential(*[Block(dim, 4, causal=True) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        return self.ln(self.blocks(x)) @ self.tok.weight.t()


def gpt():
    def inputs(batch):
        g = torch.Generator().manual_seed(batch)
        return (torch.randint(0, 64, (batch, 16), generator=g),)

    def loss(out, idx):
        return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), idx[:, 1:].reshape(-1))
    return Gpt(), inputs, loss


class EmbeddingHead(nn.Module):
    def __init__(self, vocab=100, dim=16, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.fc = nn.Linear(dim, classes)

    def forward(self, idx):
        return self.fc(self.emb(idx).mean(1))


def embedding_ce():
    def inputs(batch):
        g = torch.Generator().manual_seed(batch)
        return (torch.randint(0, 100, (batch, 7), generator=g),)
    return EmbeddingHead(), inputs, lambda out, idx: F.cross_entropy(out, idx[:, 0] % 5)


MODELS = {
    "mlp": mlp,
    "cnn": cnn,
    "resnet18": resnet18,
    "transformer_block": transformer_block,
    "gpt": gpt,
    "embedding_ce": embedding_ce,
}
