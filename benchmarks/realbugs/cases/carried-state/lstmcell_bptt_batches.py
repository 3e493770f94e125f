import torch
import torch.nn as nn

torch.manual_seed(0)

vocab_size, embed_dim, hidden_dim = 12, 6, 8
bptt, batch_size = 4, 2
iterations = 2

embed = nn.Embedding(vocab_size, embed_dim)
model = nn.LSTMCell(embed_dim, hidden_dim)
decoder = nn.Linear(hidden_dim, vocab_size)
params = list(embed.parameters()) + list(model.parameters()) + list(decoder.parameters())
optim = torch.optim.SGD(params, lr=0.05)
criterion = nn.CrossEntropyLoss()

data = torch.randint(0, vocab_size, (batch_size, 5 * bptt + 1))
input_batches = [data[:, i * bptt:(i + 1) * bptt] for i in range(5)]
target_batches = [data[:, i * bptt + 1:(i + 1) * bptt + 1] for i in range(5)]

hidden = (torch.zeros(batch_size, hidden_dim), torch.zeros(batch_size, hidden_dim))
for i in range(iterations):
    hidden = (hidden[0].detach(), hidden[1].detach())
    total_loss = 0
    for batch_i in range(len(input_batches)):
        loss = 0
        for t in range(bptt):
            hidden = model(embed(input_batches[batch_i][:, t]), hidden)
            output = decoder(hidden[0])
            loss = loss + criterion(output, target_batches[batch_i][:, t])
        optim.zero_grad()
        loss.backward()
        optim.step()
        total_loss += loss.item()
