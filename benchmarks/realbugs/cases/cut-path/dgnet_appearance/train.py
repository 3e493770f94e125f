import torch
import torch.nn as nn
import torch.nn.functional as F

from networks import ContentEncoder, Decoder
from reIDmodel import ft_netAB

torch.manual_seed(0)


class DGNet_Trainer(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.id_a = ft_netAB(num_classes)
        self.enc_content = ContentEncoder()
        self.dec = Decoder()
        params = list(self.id_a.parameters()) + list(self.enc_content.parameters()) + list(self.dec.parameters())
        self.gen_opt = torch.optim.Adam(params, lr=1e-3)

    def gen_update(self, x_a, x_b, l_a):
        self.gen_opt.zero_grad()
        f_a, p_a = self.id_a(x_a)
        s_a = self.enc_content(x_a)
        s_b = self.enc_content(x_b)
        x_a_recon = self.dec(s_a, f_a)
        x_ba = self.dec(s_b, f_a)
        f_a_recon, _ = self.id_a(x_ba)
        loss_gen_recon_x_a = F.l1_loss(x_a_recon, x_a)
        loss_gen_recon_f_a = F.l1_loss(f_a_recon, f_a)
        loss_id = F.cross_entropy(p_a, l_a)
        loss_gen_total = loss_gen_recon_x_a + loss_gen_recon_f_a + loss_id
        loss_gen_total.backward()
        self.gen_opt.step()
        return loss_gen_total.item()


trainer = DGNet_Trainer()
x_a = torch.randn(8, 32)
x_b = torch.randn(8, 32)
l_a = torch.randint(0, 5, (8,))
for iteration in range(4):
    print(iteration, trainer.gen_update(x_a, x_b, l_a))
