"""Building blocks of a layer: each knows its tensors and its operators."""
