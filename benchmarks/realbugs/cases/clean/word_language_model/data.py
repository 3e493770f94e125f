import torch


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, num_words=50, train_len=400, valid_len=120):
        self.dictionary = Dictionary()
        for i in range(num_words):
            self.dictionary.add_word("w%d" % i)
        g = torch.Generator().manual_seed(0)
        self.train = torch.randint(0, num_words, (train_len,), generator=g)
        self.valid = torch.randint(0, num_words, (valid_len,), generator=g)
        self.test = torch.randint(0, num_words, (valid_len,), generator=g)
