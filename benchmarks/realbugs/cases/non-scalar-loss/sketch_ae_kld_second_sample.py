import torch
import torch.nn as nn

torch.manual_seed(0)


def define_part_encoder(input_nc, latent_dim):
    return nn.Sequential(nn.Conv2d(input_nc, 8, 4, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(8, latent_dim, 4, 2, 1), nn.LeakyReLU(0.2))


def define_part_decoder(output_nc, latent_dim):
    return nn.Sequential(nn.ConvTranspose2d(latent_dim, 8, 4, 2, 1), nn.ReLU(),
                         nn.ConvTranspose2d(8, output_nc, 4, 2, 1), nn.Tanh())


class Combine_AE(nn.Module):
    def __init__(self, img_size, img_channels):
        super().__init__()
        self.eye1_encoder = define_part_encoder(img_channels, 16)
        self.nose_encoder = define_part_encoder(img_channels, 16)
        self.face_encoder = define_part_encoder(img_channels, 16)
        self.eye1_decoder = define_part_decoder(img_channels, 16)
        self.nose_decoder = define_part_decoder(img_channels, 16)
        self.face_decoder = define_part_decoder(img_channels, 16)

    def encode(self, x):
        eye1_x = x[:, :, 4:4 + 8, 4:4 + 8]
        nose_x = x[:, :, 8:8 + 12, 10:10 + 12]
        face_x = x
        return self.eye1_encoder(eye1_x), self.nose_encoder(nose_x), self.face_encoder(face_x)

    def decode(self, eye1_l, nose_l, face_l):
        return self.eye1_decoder(eye1_l), self.nose_decoder(nose_l), self.face_decoder(face_l)

    def forward(self, x):
        eye1, nose, face = self.encode(x)
        eye1_x, nose_x, face_x = self.decode(eye1, nose, face)
        return eye1_x, nose_x, face_x


model = Combine_AE(img_size=32, img_channels=1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.0002, betas=(0.5, 0.999))
loss_fn = nn.MSELoss()
kld_w = 0.00025
encoder_key = ['eye1', 'nose', 'face']
train_loader = [torch.rand(4, 1, 32, 32) - 0.5 for _ in range(2)]

for epoch in range(2):
    running_loss = {}
    model.train()
    for i, sketches in enumerate(train_loader):
        for k, key in enumerate(encoder_key):
            if k == 0:
                target = sketches[:, :, 4:4 + 8, 4:4 + 8]
            elif k == 1:
                target = sketches[:, :, 8:8 + 12, 10:10 + 12]
            elif k == 2:
                target = sketches

            output = model(sketches)[k]
            recon_loss = loss_fn(output[0], target)
            kld_loss = output[1]
            loss = recon_loss + kld_w * kld_loss
            running_loss[key + '_mse'] = recon_loss.item()

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(epoch, running_loss)
