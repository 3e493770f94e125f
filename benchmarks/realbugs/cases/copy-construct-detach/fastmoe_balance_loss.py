import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BaseGate(nn.Module):
    def __init__(self, num_expert, world_size):
        super().__init__()
        self.world_size = world_size
        self.num_expert = num_expert
        self.tot_expert = world_size * num_expert
        self.loss = None

    def set_loss(self, loss):
        self.loss = loss

    def get_loss(self, clear=True):
        loss = self.loss
        if clear:
            self.loss = None
        return loss


class GShardGate(BaseGate):
    def __init__(self, d_model, num_expert, world_size, top_k=2):
        super().__init__(num_expert, world_size)
        self.gate = nn.Linear(d_model, self.tot_expert)
        self.top_k = top_k

    def forward(self, inp):
        gate = self.gate(inp)
        gate_top_k_val, gate_top_k_idx = torch.topk(gate, k=self.top_k, dim=-1, largest=True, sorted=False)
        gate_score = F.softmax(gate_top_k_val, dim=-1)

        S = gate.shape[0]
        top1_idx = gate_top_k_idx[:, 0]
        c_e = torch.scatter_add(torch.zeros(self.tot_expert), 0, top1_idx, torch.ones(S)) / S
        m_e = torch.mean(F.softmax(gate, dim=1), dim=0)
        loss = torch.mean(c_e * m_e) * (self.num_expert ** 2)
        self.set_loss(loss)
        return gate_top_k_idx, gate_score


class FMoETransformerMLP(nn.Module):
    def __init__(self, num_expert, d_model, d_hidden, top_k=2):
        super().__init__()
        self.gate = GShardGate(d_model, num_expert, 1, top_k=top_k)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(d_model, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_model)) for _ in range(num_expert)]
        )

    def forward(self, inp):
        gate_top_k_idx, gate_score = self.gate(inp)
        expert_outputs = torch.stack([e(inp) for e in self.experts], dim=1)
        picked = torch.gather(expert_outputs, 1, gate_top_k_idx.unsqueeze(-1).expand(-1, -1, inp.shape[-1]))
        return (gate_score.unsqueeze(-1) * picked).sum(1)


class TransformerLayer(nn.Module):
    def __init__(self, d_model, num_expert):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.mlp = FMoETransformerMLP(num_expert, d_model, 2 * d_model)

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class LanguageModel(nn.Module):
    def __init__(self, vocab=40, d_model=16, num_layers=2, num_expert=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([TransformerLayer(d_model, num_expert) for _ in range(num_layers)])
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def forward_step_func(data_iterator, model):
    tokens, labels = next(data_iterator)
    logits = model(tokens)
    loss = F.cross_entropy(logits, labels)
    return loss, {'lm loss': loss.detach()}


balance_strategy = 'gshard'
balance_loss_weight = 1.0
model = LanguageModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
data = [(torch.randint(0, 40, (32,)), torch.randint(0, 40, (32,))) for _ in range(6)]
data_iterator = iter(data)

for iteration in range(6):
    output = forward_step_func(data_iterator, model)
    loss_name = balance_strategy + "_loss"
    loss_list = [l.mlp.gate.get_loss(clear=False) for l in model.layers]
    (loss, state_dict), bal_loss = (
        output,
        (
            torch.tensor(
                loss_list, device=loss_list[0].device
            ).mean()
            * balance_loss_weight
        ).float(),
    )
    averaged_bal_loss = bal_loss.clone().detach()
    loss += bal_loss
    state_dict[loss_name] = averaged_bal_loss

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(iteration, state_dict['lm loss'].item(), state_dict[loss_name].item())
