"""The machinery the labs' checks share: failures, comparisons, sentinels, mistakes' ids, wrong answers."""
