import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)


class PromptGenBlock(nn.Module):
    def __init__(self, prompt_dim=8, prompt_len=5, prompt_size=4, lin_dim=8):
        super(PromptGenBlock, self).__init__()
        self.prompt_param = nn.Parameter(torch.rand(1, prompt_len, prompt_dim, prompt_size, prompt_size))
        self.linear_layer = nn.Linear(lin_dim, prompt_len)
        self.conv3x3 = nn.Conv2d(prompt_dim, prompt_dim, kernel_size=3, stride=1, padding=1, bias=False)

    def forward(self, x):
        B, C, H, W = x.shape
        emb = x.mean(dim=(-2, -1))
        prompt_weights = F.softmax(self.linear_layer(emb), dim=1)
        prompt_param = self.prompt_param.data.unsqueeze(0).repeat(B, 1, 1, 1, 1, 1)
        prompt_param = prompt_param.data.squeeze(1)
        prompt_param = prompt_weights.unsqueeze(-1).unsqueeze(-1).unsqueeze(-1) * prompt_param
        prompt_param = torch.sum(prompt_param, dim=1)
        prompt_param = F.interpolate(prompt_param, (H, W), mode="bilinear")
        prompt_param = self.conv3x3(prompt_param)
        return prompt_param


class PromptIR(nn.Module):
    def __init__(self, inp_channels=3, out_channels=3, dim=8, decoder=True):
        super(PromptIR, self).__init__()
        self.patch_embed = nn.Conv2d(inp_channels, dim, kernel_size=3, stride=1, padding=1, bias=False)
        self.decoder = decoder
        if self.decoder:
            self.prompt1 = PromptGenBlock(prompt_dim=dim, prompt_len=5, prompt_size=4, lin_dim=dim)
        self.noise_level1 = nn.Conv2d(dim * 2, dim * 2, kernel_size=3, padding=1, bias=False)
        self.reduce_noise_level1 = nn.Conv2d(dim * 2, dim, kernel_size=1, bias=False)
        self.output = nn.Conv2d(dim, out_channels, kernel_size=3, stride=1, padding=1, bias=False)

    def forward(self, inp_img):
        out_dec_level1 = self.patch_embed(inp_img)
        if self.decoder:
            dec1_param = self.prompt1(out_dec_level1)
            out_dec_level1 = torch.cat([out_dec_level1, dec1_param], 1)
            out_dec_level1 = self.noise_level1(out_dec_level1)
            out_dec_level1 = self.reduce_noise_level1(out_dec_level1)
        return self.output(out_dec_level1) + inp_img


class PromptIRModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = PromptIR(decoder=True)
        self.loss_fn = nn.L1Loss()

    def training_step(self, batch, batch_idx):
        ([clean_name, de_id], degrad_patch, clean_patch) = batch
        restored = self.net(degrad_patch)
        loss = self.loss_fn(restored, clean_patch)
        return loss

    def configure_optimizers(self):
        return optim.AdamW(self.parameters(), lr=2e-4)


model = PromptIRModel()
optimizer = model.configure_optimizers()
clean = torch.rand(6, 2, 3, 8, 8)
trainloader = [(["img%d" % i, 0], (clean[i] + 0.1 * torch.randn(2, 3, 8, 8)).clamp(0, 1), clean[i]) for i in range(6)]
for epoch in range(2):
    for batch_idx, batch in enumerate(trainloader):
        optimizer.zero_grad()
        loss = model.training_step(batch, batch_idx)
        loss.backward()
        optimizer.step()
print("train_loss", loss.item())
