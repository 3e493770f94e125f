import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class OriginalModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.fc = nn.Linear(4, 5)

    def get_learnable_weights(self):
        return [self.conv1.weight, self.conv2.weight]

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


class NeRN(nn.Module):
    def __init__(self, embedding_dim=8, hidden=32):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(embedding_dim, hidden), nn.GELU(), nn.Linear(hidden, 9))

    def forward(self, positional_embeddings):
        return [self.layers(e) for e in positional_embeddings]


original_model = OriginalModel()
reconstructed_model = OriginalModel()
reconstructed_model.fc.load_state_dict(original_model.fc.state_dict())
for p in reconstructed_model.parameters():
    p.requires_grad = False

shapes = [w.shape for w in original_model.get_learnable_weights()]
positional_embeddings = [torch.randn(s[0] * s[1], 8) for s in shapes]
predictor = NeRN()
optimizer = torch.optim.Adam(predictor.parameters(), lr=1e-3)


def update_weights(model, predicted_weights):
    for curr_layer_weights, sampled_predicted_weights in zip(model.get_learnable_weights(), predicted_weights):
        curr_layer_weights.data = sampled_predicted_weights.view(curr_layer_weights.shape)


for step in range(5):
    predicted_weights = predictor(positional_embeddings)
    update_weights(reconstructed_model, predicted_weights)
    reconstruction_loss = sum(
        F.mse_loss(p.view(w.shape), w.detach()) for p, w in zip(predicted_weights, original_model.get_learnable_weights())
    )
    batch = torch.randn(4, 1, 6, 6)
    with torch.no_grad():
        original_logits = original_model(batch)
    reconstructed_logits = reconstructed_model(batch)
    distillation_loss = F.kl_div(F.log_softmax(reconstructed_logits, dim=1), F.softmax(original_logits, dim=1), reduction="batchmean")
    loss = reconstruction_loss + distillation_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
