"""Generates the on-chip (read-once) fused softmax cross-entropy fwd+bwd prototype
as MLIR (gpu + nvvm + vector + memref + arith + scf + a few llvm ops).

One thread-block cluster of C CTAs per row; CTA `rank` owns vectors
[rank*PV, min((rank+1)*PV, V/8)) of the row (PV = ceil(V/8 / C)); thread `tid`
owns vectors rank*PV + k*T + tid for k < K (K = ceil(PV / T), unrolled), kept
in registers between the statistics and the gradient: each logit is read from
device memory exactly once.

Semantics: bf16 logits [N, V] (contiguous, V % 8 == 0, V static), i64 class
targets, ignore_index = -100, mean over kept rows (count computed on device by a
one-block prologue kernel), loss accumulated with one atomic add per row,
dlogits = (softmax - onehot) / count rounded once from f32 to bf16.

Variants (VARIANTS): Ks of the K vectors per thread are staged in shared memory
by cp.async (nvgpu.device_async_copy), the other K - Ks stay in registers.

Usage: python3 gen.py > onchip.mlir   (or import and call module_text(variants))
"""

import math
import sys

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
SENT = -1.0e30  # finite "minus infinity" for running maxima (no inf - inf)
MAX_SLOTS = 512  # f32 pairs of the DSMEM exchange buffer (C * warps <= 256)


class Em:
    """Tiny SSA text emitter."""

    def __init__(self, indent="      "):
        self.lines = []
        self.n = 0
        self.indent = indent
        self.consts = {}

    def fresh(self, p="v"):
        self.n += 1
        return f"%{p}{self.n}"

    def __call__(self, rhs, p="v"):
        name = self.fresh(p)
        self.lines.append(f"{self.indent}{name} = {rhs}")
        return name

    def raw(self, line):
        self.lines.append(f"{self.indent}{line}")

    def push(self):
        self.indent += "  "

    def pop(self):
        self.indent = self.indent[:-2]

    # constants are emitted where first used (we only use them in dominating
    # positions by emitting all of them at the top through `const`)
    def idx(self, v):
        return self.const(v, "index")

    def i32(self, v):
        return self.const(v, "i32")

    def f32(self, v):
        return self.const(float(v), "f32")

    def const(self, v, ty):
        key = (v, ty)
        if key not in self.consts:
            if ty == "f32":
                lit = repr(float(v)) if math.isfinite(v) else ("0xFF800000" if v < 0 else "0x7F800000")
                if "e" in lit and "." not in lit.split("e")[0]:
                    lit = lit.replace("e", ".0e")
                if lit == "nan":
                    lit = "0x7FC00000"
            else:
                lit = str(v)
            name = f"%k{len(self.consts)}"
            self.consts[key] = (name, f"{name} = arith.constant {lit}" + (f" : {ty}" if ty else ""))
        return self.consts[key][0]

    def const_block(self, indent):
        return [indent + line for _, line in self.consts.values()]


def ex2(e, x):
    return e(f'llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"({x}) : (f32) -> f32')


def lg2(e, x):
    return e(f'llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"({x}) : (f32) -> f32')


def combine(e, m1, s1, m2, s2):
    """(m1, s1) + (m2, s2) of the online softmax, max in logit units, sums in base 2."""
    L = e.f32(LOG2E)
    M = e(f"arith.maxnumf {m1}, {m2} : f32")
    d1 = e(f"arith.subf {m1}, {M} : f32")
    d2 = e(f"arith.subf {m2}, {M} : f32")
    d1 = e(f"arith.mulf {d1}, {L} : f32")
    d2 = e(f"arith.mulf {d2}, {L} : f32")
    a = ex2(e, d1)
    b = ex2(e, d2)
    a = e(f"arith.mulf {s1}, {a} : f32")
    s = e(f"math.fma {s2}, {b}, {a} : f32")
    return M, s


def warp_allreduce_pair(e, m, s):
    w = e.i32(32)
    for off in (16, 8, 4, 2, 1):
        o = e.i32(off)
        mo = e.fresh()
        e.raw(f"{mo}, {e.fresh('ok')} = gpu.shuffle xor {m}, {o}, {w} : f32")
        so = e.fresh()
        e.raw(f"{so}, {e.fresh('ok')} = gpu.shuffle xor {s}, {o}, {w} : f32")
        m, s = combine(e, m, s, mo, so)
    return m, s


def kernel(V, C, T, minblocks, name, Ks=0):
    assert V % 8 == 0 and T % 32 == 0
    VV = V // 8
    PV = -(-VV // C)
    K = -(-PV // T)
    assert 0 <= Ks <= K
    WG = "#gpu.address_space<workgroup>"
    W = T // 32
    P = C * W
    assert P <= MAX_SLOTS // 2
    e = Em()
    L = e.f32(LOG2E)
    c0, c1, c8 = e.idx(0), e.idx(1), e.idx(8)
    bid = e("gpu.block_id x")
    tid = e("gpu.thread_id x")
    rank32 = e("nvvm.read.ptx.sreg.cluster.ctarank : i32")
    rank = e(f"arith.index_cast {rank32} : i32 to index")
    row = e(f"arith.divui {bid}, {e.idx(C)} : index")
    tgt = e(f"memref.load %t[{row}] : memref<?xi64>")
    ign = e(f"arith.cmpi eq, {tgt}, {e.const(-100, 'i64')} : i64")
    rowbase = e(f"arith.muli {row}, {e.idx(V)} : index")
    vs = e(f"arith.muli {rank}, {e.idx(PV)} : index")
    ve = e(f"arith.addi {vs}, {e.idx(PV)} : index")
    ve = e(f"arith.minui {ve}, {e.idx(VV)} : index")
    vbase = e(f"arith.addi {vs}, {tid} : index")
    eb = e(f"arith.muli {vbase}, {c8} : index")
    eb = e(f"arith.addi {rowbase}, {eb} : index")
    # affine offsets (base + constant: one address register, immediate offsets)
    # valid_k: k*T < ve - vbase (signed; one register instead of K indices)
    rem = e(f"arith.subi {ve}, {vbase} : index")
    vi, valid, off = [], [], []
    for k in range(K):
        vi.append(e.idx(k * T))
        # (tried: a constant `true` where the slice is statically full, to
        # save predicate registers: LLVM then made straight-line code that
        # ptxas spilled 300+ bytes of; the guarded loads spill far less)
        valid.append(e(f"arith.cmpi slt, {e.idx(k * T)}, {rem} : index"))
        off.append(e(f"arith.addi {eb}, {e.idx(k * T * 8)} : index") if k else eb)
    zero8 = e.const("dense<0.0>", "vector<8xbf16>")
    # dynamic shared memory: [0, 2 KiB) the DSMEM exchange slots (f32 pairs),
    # then Ks*T 16-byte vectors staged by cp.async (vector k of thread t at k*T + t)
    dyn = e(f"gpu.dynamic_shared_memory : memref<?xi8, {WG}>")
    pm = e(f"memref.view {dyn}[{c0}][] : memref<?xi8, {WG}> to memref<{MAX_SLOTS}xf32, {WG}>")
    pi = e(f"memref.extract_aligned_pointer_as_index {pm} : memref<{MAX_SLOTS}xf32, {WG}> -> index")
    pi64 = e(f"arith.index_cast {pi} : index to i64")
    parts = e(f"llvm.inttoptr {pi64} : i64 to !llvm.ptr<3>")
    SE = max(Ks * T * 8, 8)
    STY = f"memref<{SE}xbf16, {WG}>"
    stage = e(f"memref.view {dyn}[{e.idx(MAX_SLOTS * 4)}][] : memref<?xi8, {WG}> to {STY}")
    sb = e(f"arith.muli {tid}, {c8} : index")
    sidx = [e(f"arith.addi {sb}, {e.idx(k * T * 8)} : index") if k else sb for k in range(Ks)]
    # reads of the stage through one llvm pointer + constant offsets (memref
    # indexing made LLVM keep one 64-bit address per vector live: spills)
    tid32 = e(f"arith.index_cast {tid} : index to i32")
    sbo = e(f"arith.muli {tid32}, {e.i32(16)} : i32")
    sbo = e(f"arith.addi {sbo}, {e.i32(MAX_SLOTS * 4)} : i32")
    sbase = e(f"llvm.getelementptr {parts}[{sbo}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")

    def stage_load(k):
        q = e(f"llvm.getelementptr {sbase}[{k * T * 16}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8") if k else sbase
        return e(f"llvm.load {q} {{alignment = 16 : i64}} : !llvm.ptr<3> -> vector<8xbf16>")
    e.raw(f"scf.if {ign} {{")
    e.push()
    # ignored row: dlogits = 0, no loss, no cluster traffic (uniform per cluster)
    for k in range(K):
        e.raw(f"scf.if {valid[k]} {{")
        e.raw(f"  vector.store {zero8}, %dx[{off[k]}] {{alignment = 16 : i64}} : memref<?xbf16>, vector<8xbf16>")
        e.raw("}")
    e.pop()
    e.raw("} else {")
    e.push()
    # every CTA of the cluster has started before anyone writes its smem
    e.raw("nvvm.cluster.arrive.relaxed {aligned}")
    toks = []
    for k in range(Ks):
        src = e(f"arith.select {valid[k]}, {off[k]}, {rowbase} : index")
        nel = e(f"arith.select {valid[k]}, {c8}, {c0} : index")
        toks.append(e(f"nvgpu.device_async_copy %x[{src}], {stage}[{sidx[k]}], 8, {nel} {{bypassL1}} "
                      f": memref<?xbf16> to {STY}"))
    if Ks:
        grp = e(f"nvgpu.device_async_create_group {', '.join(toks)}")
    raw = [None] * Ks
    for k in range(Ks, K):
        r = e.fresh()
        e.raw(f"{r} = scf.if {valid[k]} -> (vector<8xbf16>) {{")
        e.raw(f"  %l{r[1:]} = vector.load %x[{off[k]}] {{alignment = 16 : i64}} : memref<?xbf16>, vector<8xbf16>")
        e.raw(f"  scf.yield %l{r[1:]} : vector<8xbf16>")
        e.raw("} else {")
        e.raw(f"  scf.yield {zero8} : vector<8xbf16>")
        e.raw("}")
        raw.append(r)
    ys = [None] * Ks
    for k in range(Ks, K):
        yv = e(f"arith.extf {raw[k]} : vector<8xbf16> to vector<8xf32>")
        ys.append([e(f"vector.extract {yv}[{j}] : f32 from vector<8xf32>") for j in range(8)])
    # local max (per vector tree, masked per vector)
    m = e.f32(SENT)
    for k in range(Ks, K):
        lv = ys[k]
        while len(lv) > 1:
            lv = [e(f"arith.maxnumf {lv[i]}, {lv[i + 1]} : f32") for i in range(0, len(lv), 2)]
        mk = e(f"arith.maxnumf {m}, {lv[0]} : f32")
        m = e(f"arith.select {valid[k]}, {mk}, {m} : f32")
    nmL = e(f"arith.mulf {m}, {e.f32(-LOG2E)} : f32")
    s = e.f32(0.0)
    for k in range(Ks, K):
        ex = [ex2(e, e(f"math.fma {y}, {L}, {nmL} : f32")) for y in ys[k]]
        while len(ex) > 1:
            ex = [e(f"arith.addf {ex[i]}, {ex[i + 1]} : f32") for i in range(0, len(ex), 2)]
        sk = e(f"arith.addf {s}, {ex[0]} : f32")
        s = e(f"arith.select {valid[k]}, {sk}, {s} : f32")
    if Ks:
        # the staged vectors: each thread reads back only what it copied, so
        # cp.async.wait_group alone (no CTA barrier) makes them visible
        e.raw(f"nvgpu.device_async_wait {grp} {{numGroups = 0 : i32}}")
        for k in range(Ks):  # online (max, sum) per vector: one extra ex2 per 8 logits
            lv = stage_load(k)
            yv = e(f"arith.extf {lv} : vector<8xbf16> to vector<8xf32>")
            yk = [e(f"vector.extract {yv}[{j}] : f32 from vector<8xf32>") for j in range(8)]
            mv = yk
            while len(mv) > 1:
                mv = [e(f"arith.maxnumf {mv[i]}, {mv[i + 1]} : f32") for i in range(0, len(mv), 2)]
            mn = e(f"arith.maxnumf {m}, {mv[0]} : f32")
            nmn = e(f"arith.mulf {mn}, {e.f32(-LOG2E)} : f32")
            ex = [ex2(e, e(f"math.fma {y}, {L}, {nmn} : f32")) for y in yk]
            while len(ex) > 1:
                ex = [e(f"arith.addf {ex[i]}, {ex[i + 1]} : f32") for i in range(0, len(ex), 2)]
            dm = e(f"arith.subf {m}, {mn} : f32")
            dm = e(f"arith.mulf {dm}, {L} : f32")
            sc = ex2(e, dm)
            sn = e(f"math.fma {s}, {sc}, {ex[0]} : f32")
            m = e(f"arith.select {valid[k]}, {mn}, {m} : f32")
            s = e(f"arith.select {valid[k]}, {sn}, {s} : f32")
    m, s = warp_allreduce_pair(e, m, s)
    # push the warp's pair to slot rank*W + warp of CTA `lane` (lane < C)
    lane = e(f"arith.remui {tid}, {e.idx(32)} : index")
    warp = e(f"arith.divui {tid}, {e.idx(32)} : index")
    slot = e(f"arith.muli {rank}, {e.idx(W)} : index")
    slot = e(f"arith.addi {slot}, {warp} : index")
    slot = e(f"arith.muli {slot}, {e.idx(2)} : index")
    slot32 = e(f"arith.index_cast {slot} : index to i32")
    mine = e(f"llvm.getelementptr {parts}[{slot32}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32")
    pair = e(f"vector.from_elements {m}, {s} : vector<2xf32>")
    e.raw("nvvm.cluster.wait {aligned}")
    islow = e(f"arith.cmpi ult, {lane}, {e.idx(C)} : index")
    e.raw(f"scf.if {islow} {{")
    e.push()
    lane32 = e(f"arith.index_cast {lane} : index to i32")
    remote = e(f"nvvm.mapa {mine}, {lane32} : !llvm.ptr<3> -> !llvm.ptr<7>")
    e.raw(f"llvm.store {pair}, {remote} {{alignment = 8 : i64}} : vector<2xf32>, !llvm.ptr<7>")
    e.pop()
    e.raw("}")
    e.raw("nvvm.cluster.arrive {aligned}")
    e.raw("nvvm.cluster.wait {aligned}")
    # every warp combines the P = C*W pairs of its own smem
    M, S = None, None
    for i in range(-(-P // 32)):
        sl = e(f"arith.addi {lane}, {e.idx(32 * i)} : index") if i else lane
        if P - 32 * i < 32:
            ok = e(f"arith.cmpi ult, {sl}, {e.idx(P)} : index")
            sl = e(f"arith.minui {sl}, {e.idx(P - 1)} : index")
        else:
            ok = None
        sl = e(f"arith.muli {sl}, {e.idx(2)} : index")
        sl = e(f"arith.index_cast {sl} : index to i32")
        p = e(f"llvm.getelementptr {parts}[{sl}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32")
        pv = e(f"llvm.load {p} {{alignment = 8 : i64}} : !llvm.ptr<3> -> vector<2xf32>")
        pm = e(f"vector.extract {pv}[0] : f32 from vector<2xf32>")
        ps = e(f"vector.extract {pv}[1] : f32 from vector<2xf32>")
        if ok is not None:
            pm = e(f"arith.select {ok}, {pm}, {e.f32(SENT)} : f32")
            ps = e(f"arith.select {ok}, {ps}, {e.f32(0.0)} : f32")
        if M is None:
            M, S = pm, ps
        else:
            M, S = combine(e, M, S, pm, ps)
    M, S = warp_allreduce_pair(e, M, S)
    count = e(f"memref.load %cnt[{c0}] : memref<1xf32>")
    inv = e(f"arith.divf {e.f32(1.0)}, {count} : f32")
    lgS = lg2(e, S)
    ML = e(f"arith.mulf {M}, {L} : f32")
    lseL = e(f"arith.addf {ML}, {lgS} : f32")  # lse * log2(e)
    sc = e(f"arith.mulf {S}, {count} : f32")
    lgSc = lg2(e, sc)
    bias = e(f"arith.addf {ML}, {lgSc} : f32")
    bias = e(f"arith.negf {bias} : f32")  # -(lse*log2e) - log2(count)
    # loss: rank 0, thread 0
    r0 = e(f"arith.cmpi eq, {rank}, {c0} : index")
    t0 = e(f"arith.cmpi eq, {tid}, {c0} : index")
    first = e(f"arith.andi {r0}, {t0} : i1")
    e.raw(f"scf.if {first} {{")
    e.push()
    ti = e(f"arith.index_cast {tgt} : i64 to index")
    xo = e(f"arith.addi {rowbase}, {ti} : index")
    xt = e(f"memref.load %x[{xo}] : memref<?xbf16>")
    xt = e(f"arith.extf {xt} : bf16 to f32")
    lse = e(f"arith.mulf {lseL}, {e.f32(LN2)} : f32")
    lr = e(f"arith.subf {lse}, {xt} : f32")
    lr = e(f"arith.mulf {lr}, {inv} : f32")
    e(f"memref.atomic_rmw addf {lr}, %loss[{c0}] : (f32, memref<1xf32>) -> f32")
    e.pop()
    e.raw("}")
    # gradient from the registers
    tiv = e(f"arith.index_cast {tgt} : i64 to index")
    tvec = e(f"arith.divui {tiv}, {c8} : index")
    tl = e(f"arith.remui {tiv}, {c8} : index")
    dt = e(f"arith.subi {tvec}, {vbase} : index")  # target vector - this thread's first
    tl32 = e(f"arith.index_cast {tl} : index to i32")
    iota = e.const("dense<[0, 1, 2, 3, 4, 5, 6, 7]>", "vector<8xi32>")
    zf8 = e.const("dense<0.0>", "vector<8xf32>")
    for k in range(K):
        # re-widen from the packed bf16 registers with integer ops (distinct IR
        # from pass 1's extf, so LLVM keeps 4 packed registers per vector live
        # across the cluster exchange instead of 8 f32 ones)
        rk = raw[k] if k >= Ks else stage_load(k)
        w4 = e(f"vector.bitcast {rk} : vector<8xbf16> to vector<4xi32>")
        yk = []
        for j in range(4):
            wj = e(f"vector.extract {w4}[{j}] : i32 from vector<4xi32>")
            lo = e(f"arith.shli {wj}, {e.i32(16)} : i32")
            hi = e(f"arith.andi {wj}, {e.i32(-65536)} : i32")
            yk.append(e(f"arith.bitcast {lo} : i32 to f32"))
            yk.append(e(f"arith.bitcast {hi} : i32 to f32"))
        g = [ex2(e, e(f"math.fma {y}, {L}, {bias} : f32")) for y in yk]
        gv = e(f"vector.from_elements {', '.join(g)} : vector<8xf32>")
        hit = e(f"arith.cmpi eq, {vi[k]}, {dt} : index")
        res = e.fresh()
        e.raw(f"{res} = scf.if {hit} -> (vector<8xf32>) {{")
        e.push()
        tls = e(f"vector.broadcast {tl32} : i32 to vector<8xi32>")
        msk = e(f"arith.cmpi eq, {iota}, {tls} : vector<8xi32>")
        invs = e(f"vector.broadcast {inv} : f32 to vector<8xf32>")
        oh = e(f"arith.select {msk}, {invs}, {zf8} : vector<8xi1>, vector<8xf32>")
        g2 = e(f"arith.subf {gv}, {oh} : vector<8xf32>")
        e.raw(f"scf.yield {g2} : vector<8xf32>")
        e.pop()
        e.raw("} else {")
        e.raw(f"  scf.yield {gv} : vector<8xf32>")
        e.raw("}")
        ob = e(f"arith.truncf {res} : vector<8xf32> to vector<8xbf16>")
        e.raw(f"scf.if {valid[k]} {{")
        e.raw(f"  vector.store {ob}, %dx[{off[k]}] {{alignment = 16 : i64}} : memref<?xbf16>, vector<8xbf16>")
        e.raw("}")
    e.pop()
    e.raw("}")
    e.raw("gpu.return")
    head = (f"    gpu.func @{name}(%x: memref<?xbf16>, %t: memref<?xi64>, %dx: memref<?xbf16>, "
            f"%loss: memref<1xf32>, %cnt: memref<1xf32>) kernel attributes "
            f"{{nvvm.maxntid = array<i32: {T}, 1, 1>, nvvm.minctasm = {minblocks} : i32, "
            f"known_block_size = array<i32: {T}, 1, 1>}} {{")
    body = [head] + e.const_block("      ") + e.lines + ["    }"]
    return "\n".join(body), dict(V=V, C=C, T=T, K=K, PV=PV, minblocks=minblocks)


PROLOGUE = r"""
    // cnt[0] = number of rows whose target is not -100 (f32); loss[0] = 0 (NaN if none)
    gpu.func @prologue(%t: memref<?xi64>, %n: index, %loss: memref<1xf32>, %cnt: memref<1xf32>)
        workgroup(%red: memref<32xf32, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 1024, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1024 = arith.constant 1024 : index
      %ign = arith.constant -100 : i64
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %nan = arith.constant 0x7FC00000 : f32
      %w = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %tid = gpu.thread_id x
      %part = scf.for %i = %tid to %n step %c1024 iter_args(%a = %zero) -> (f32) {
        %ti = memref.load %t[%i] : memref<?xi64>
        %keep = arith.cmpi ne, %ti, %ign : i64
        %inc = arith.select %keep, %one, %zero : f32
        %b = arith.addf %a, %inc : f32
        scf.yield %b : f32
      }
      %r1o0, %r1ok0 = gpu.shuffle xor %part, %o16, %w : f32
      %r1s0 = arith.addf %part, %r1o0 : f32
      %r1o1, %r1ok1 = gpu.shuffle xor %r1s0, %o8, %w : f32
      %r1s1 = arith.addf %r1s0, %r1o1 : f32
      %r1o2, %r1ok2 = gpu.shuffle xor %r1s1, %o4, %w : f32
      %r1s2 = arith.addf %r1s1, %r1o2 : f32
      %r1o3, %r1ok3 = gpu.shuffle xor %r1s2, %o2, %w : f32
      %r1s3 = arith.addf %r1s2, %r1o3 : f32
      %r1o4, %r1ok4 = gpu.shuffle xor %r1s3, %o1, %w : f32
      %r1s4 = arith.addf %r1s3, %r1o4 : f32
      %r1 = arith.addf %r1s4, %zero : f32
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %tid, %c32 : index
      %l0 = arith.cmpi eq, %lane, %c0 : index
      scf.if %l0 {
        memref.store %r1, %red[%warp] : memref<32xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %w0 = arith.cmpi eq, %warp, %c0 : index
      scf.if %w0 {
        %v = memref.load %red[%lane] : memref<32xf32, #gpu.address_space<workgroup>>
        %r2o0, %r2ok0 = gpu.shuffle xor %v, %o16, %w : f32
        %r2s0 = arith.addf %v, %r2o0 : f32
        %r2o1, %r2ok1 = gpu.shuffle xor %r2s0, %o8, %w : f32
        %r2s1 = arith.addf %r2s0, %r2o1 : f32
        %r2o2, %r2ok2 = gpu.shuffle xor %r2s1, %o4, %w : f32
        %r2s2 = arith.addf %r2s1, %r2o2 : f32
        %r2o3, %r2ok3 = gpu.shuffle xor %r2s2, %o2, %w : f32
        %r2s3 = arith.addf %r2s2, %r2o3 : f32
        %r2o4, %r2ok4 = gpu.shuffle xor %r2s3, %o1, %w : f32
        %r2s4 = arith.addf %r2s3, %r2o4 : f32
        %r2 = arith.addf %r2s4, %zero : f32
        scf.if %l0 {
          memref.store %r2, %cnt[%c0] : memref<1xf32>
          %none = arith.cmpf oeq, %r2, %zero : f32
          %init = arith.select %none, %nan, %zero : f32
          memref.store %init, %loss[%c0] : memref<1xf32>
        }
      }
      gpu.return
    }
"""


def host(name, C, T, smem_bytes):
    return f"""
  func.func @{name}(%x: memref<?x?xbf16>, %t: memref<?xi64>, %dx: memref<?x?xbf16>,
                    %loss: memref<1xf32>, %cnt: memref<1xf32>) attributes {{llvm.emit_c_interface}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cC = arith.constant {C} : index
    %cT = arith.constant {T} : index
    %c1024 = arith.constant 1024 : index
    %smem = arith.constant {smem_bytes} : i32
    %n = memref.dim %t, %c0 : memref<?xi64>
    %xf = memref.collapse_shape %x [[0, 1]] : memref<?x?xbf16> into memref<?xbf16>
    %dxf = memref.collapse_shape %dx [[0, 1]] : memref<?x?xbf16> into memref<?xbf16>
    gpu.launch_func @onchip::@prologue blocks in (%c1, %c1, %c1) threads in (%c1024, %c1, %c1)
        args(%t : memref<?xi64>, %n : index, %loss : memref<1xf32>, %cnt : memref<1xf32>)
    %grid = arith.muli %n, %cC : index
    gpu.launch_func @onchip::@{name}_k clusters in (%cC, %c1, %c1) blocks in (%grid, %c1, %c1)
        threads in (%cT, %c1, %c1) dynamic_shared_memory_size %smem
        args(%xf : memref<?xbf16>, %t : memref<?xi64>, %dxf : memref<?xbf16>, %loss : memref<1xf32>,
             %cnt : memref<1xf32>)
    return
  }}
"""


# (V, C = CTAs per cluster (= per row), T = threads, B = min CTAs per SM
#  (register cap 65536 / (B T)), Ks = 16-byte vectors per thread staged in
#  shared memory by cp.async; the other K - Ks stay in registers)
VARIANTS = [
    (32768, 1, 512, 2, 0), (32768, 1, 512, 2, 4), (32768, 1, 256, 4, 12), (32768, 1, 512, 2, 6),
    (65536, 2, 512, 2, 0), (65536, 1, 512, 2, 12), (65536, 2, 256, 4, 12),
    (128256, 4, 512, 2, 0), (128256, 2, 512, 2, 12), (128256, 4, 256, 4, 12),
    (262144, 8, 512, 2, 0), (262144, 4, 512, 2, 12), (262144, 8, 256, 4, 12),
]


def vname(V, C, T, mb, Ks):
    return f"ce_V{V}_C{C}_T{T}_B{mb}_S{Ks}"


def module_text(variants=VARIANTS):
    ks, hs, meta = [], [], {}
    for (V, C, T, mb, Ks) in variants:
        nm = vname(V, C, T, mb, Ks)
        text, info = kernel(V, C, T, mb, nm + "_k", Ks)
        info["Ks"] = Ks
        info["smem"] = MAX_SLOTS * 4 + Ks * T * 16
        ks.append(text)
        hs.append(host(nm, C, T, info["smem"]))
        meta[nm] = info
    mod = ("module attributes {gpu.container_module} {\n  gpu.module @onchip {\n"
           + PROLOGUE + "\n".join(ks) + "\n  }\n" + "".join(hs) + "}\n")
    return mod, meta


if __name__ == "__main__":
    sys.stdout.write(module_text()[0])
