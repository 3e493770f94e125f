import torch
import torch.nn.functional as F

from model import MVANet

torch.manual_seed(0)
lr = 1e-5
print("Generator Learning Rate: {}".format(lr))
generator = MVANet()
generator.train()
generator_optimizer = torch.optim.Adam(generator.parameters(), lr=lr)

images = torch.randn(2, 3, 32, 32)
gts = (torch.rand(2, 1, 32, 32) > 0.5).float()

for epoch in range(2):
    sideout = generator(images)
    loss = F.binary_cross_entropy_with_logits(sideout, gts)
    generator_optimizer.zero_grad()
    loss.backward()
    generator_optimizer.step()
    print("epoch {} loss {:.4f}".format(epoch, loss.item()))
