// xent-recognize then xent-inline-decomposition gives back the original
// computation: after canonicalize + cse on both sides, the ops are the same
// once SSA names are normalized.
//
// For the JAX, linalg, TOSA and near-miss inputs the multisets of ops are
// equal. The torch-mlir inputs contain linalg.generic ops with cf.assert in
// their bodies, which cse may not merge: where such an op also serves
// another user (a dead total_weight still checked by asserts, the shared
// log-softmax of a joint function) the original stays beside the inlined
// copy, so there the sets of ops are compared.

// RUN: xent-opt %S/Inputs/jax.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.jax.a
// RUN: xent-opt %S/Inputs/jax.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.jax.b
// RUN: diff %t.jax.a %t.jax.b

// RUN: xent-opt %S/Inputs/linalg_softmax.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.softmax.a
// RUN: xent-opt %S/Inputs/linalg_softmax.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.softmax.b
// RUN: diff %t.softmax.a %t.softmax.b

// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.tosa.a
// RUN: xent-opt %S/Inputs/tosa.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.tosa.b
// RUN: diff %t.tosa.a %t.tosa.b

// RUN: xent-opt %S/Inputs/near_misses.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.nm.a
// RUN: xent-opt %S/Inputs/near_misses.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort > %t.nm.b
// RUN: diff %t.nm.a %t.nm.b

// RUN: xent-opt %S/Inputs/torch_linalg.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.torch.a
// RUN: xent-opt %S/Inputs/torch_linalg.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.torch.b
// RUN: diff %t.torch.a %t.torch.b

// RUN: xent-opt %S/Inputs/torch_linalg_raw.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.raw.a
// RUN: xent-opt %S/Inputs/torch_linalg_raw.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.raw.b
// RUN: diff %t.raw.a %t.raw.b

// RUN: xent-opt %S/Inputs/torch_fx.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.fx.a
// RUN: xent-opt %S/Inputs/torch_fx.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.fx.b
// RUN: diff %t.fx.a %t.fx.b

// RUN: xent-opt %S/Inputs/torch_backward.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.bwd.a
// RUN: xent-opt %S/Inputs/torch_backward.mlir --canonicalize --cse | sed -E 's/%%[a-z0-9_]+/%%V/g' | sort -u > %t.bwd.b
// RUN: diff %t.bwd.a %t.bwd.b
