"""Fetchers: turn what the sampler yields into a batch (the same code in workers and in-process)."""


def read_sample(dataset, index):
    """`dataset[index]`; an error raised there carries the index (`dataset_index`, and a note in
    its traceback), so the DataLoader can say which sample failed."""
    try:
        return dataset[index]
    except Exception as error:
        error.dataset_index = index
        error.add_note(f"DataLoader: raised while reading sample index {index} of the dataset")
        raise


class MapFetcher:
    """Map-style datasets: read `dataset[i]` for the sampled indices, then collate."""

    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(read_sample(self.dataset, index))
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems else [read_sample(self.dataset, i) for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Iterable datasets: take the next `batch_size` items of the stream (one without batching).
    StopIteration marks the end of the stream."""

    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for item in self.iterator:
            data.append(item)
            if len(data) == self.batch_size:
                break
        if not data or (self.drop_last and len(data) < self.batch_size):
            raise StopIteration
        return self.collate_fn(data)


class FetcherFactory:
    """Builds a fresh fetcher (a new pass over the dataset); picklable for spawned workers."""

    def __init__(self, loader):
        self.dataset = loader.dataset
        self.is_iterable = loader._is_iterable
        self.auto_collation = loader._auto_collation
        self.collate_fn = loader.collate_fn
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last

    def __call__(self):
        if self.is_iterable:
            return IterableFetcher(self.dataset, self.auto_collation, self.collate_fn,
                                   self.batch_size, self.drop_last)
        return MapFetcher(self.dataset, self.auto_collation, self.collate_fn)
