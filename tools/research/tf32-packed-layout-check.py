#!/usr/bin/env python3
# Emulates the packed wide fp32 forward's index math (fwd/fwd_tf32.cuh split_k_packed,
# split_v_packed, the Q prologue and the readers) for d128, N = 32, 8 warps: every reader word holds the part
# the unpacked wide reader took there, every part is stored once, 8-lane phases of the LDS.128 / STS.128 hit 8
# distinct 16-byte bank groups, the passes' 32-bit reads 32 distinct banks. Run: python3 tools/research/tf32-packed-layout-check.py
HD, N, M, T = 128, 32, 128, 256
PQ = HD + 4; PKP = 2 * HD + 16
LAND = N * PQ; KP = N * PKP; VP = N * 3 * HD; QP = 2 * M * HD
# K
kmem = {}
for idx in range(N * (HD // 8) * 4):
    t = idx & 3; q = idx >> 5; ks = (q % (HD // 32)) * 4 + ((idx >> 2) & 3); r = (q // (HD // 32)) * 2 + ((idx >> 4) & 1)
    base = r * PKP + ks * 16 + t * 4
    vals = [('hi', r, ks*8+t), ('hi', r, ks*8+t+4), ('lo', r, ks*8+t), ('lo', r, ks*8+t+4)]
    for i, v in enumerate(vals):
        assert base + i not in kmem; kmem[base + i] = v
    assert base % 4 == 0 and base + 3 < KP
for it in range(N * (HD // 8) * 4 // T):  # pass reads: each warp instruction 32 distinct banks
    for w in range(8):
        for off in (0, 4):
            banks = set()
            for lane in range(32):
                idx = w * 32 + lane + it * T
                t = idx & 3; q = idx >> 5; ks = (q % (HD // 32)) * 4 + ((idx >> 2) & 3); r = (q // (HD // 32)) * 2 + ((idx >> 4) & 1)
                banks.add((r * PQ + ks * 8 + t + off) % 32)
            assert len(banks) == 32
    for w in range(8):  # pass stores: 8-lane phases
        for ph in range(4):
            grp = set()
            for lane in range(ph * 8, ph * 8 + 8):
                idx = w * 32 + lane + it * T
                t = idx & 3; q = idx >> 5; ks = (q % (HD // 32)) * 4 + ((idx >> 2) & 3); r = (q // (HD // 32)) * 2 + ((idx >> 4) & 1)
                grp.add(((r * PKP + ks * 16 + t * 4) // 4) % 8)
            assert len(grp) == 8, grp
for n in range(N // 8):
    for ks in range(HD // 8):
        for ph in range(4):
            grp = set()
            for lane in range(ph * 8, ph * 8 + 8):
                g, t = lane // 4, lane % 4
                a = (n * 8 + g) * PKP + ks * 16 + t * 4
                w = [kmem[a + i] for i in range(4)]
                # bk[0] = {x, z} = (hi, lo) of (n8+g, 8ks+t); bk[1] = {y, w} of column + 4
                assert w[0] == ('hi', n*8+g, ks*8+t) and w[2] == ('lo', n*8+g, ks*8+t)
                assert w[1] == ('hi', n*8+g, ks*8+t+4) and w[3] == ('lo', n*8+g, ks*8+t+4)
                grp.add((a // 4) % 8)
            assert len(grp) == 8
assert len(kmem) == N * HD * 2
# V
vmem = {}
REST = (N // 2) * 4 * HD
kN2 = HD // 16
items = (N // 2) * kN2 * 8
def vitem(idx):
    g = idx & 7; q = idx >> 5; q2 = q // (kN2 // 2)
    n2 = 2 * (q % (kN2 // 2)) + ((idx >> 3) & 1); t = (q2 & 1) | (((idx >> 4) & 1) << 1); kk = q2 >> 1
    return g, n2, t, kk
for idx in range(items):
    g, n2, t, kk = vitem(idx)
    kp = kk * 4 + t; sw = g ^ (2 * t); d = n2 * 16 + g; k0 = kk * 8 + t
    hl = kp * 4 * HD + (n2 * 16 + sw) * 4
    for base, vals in ((hl, [('hi', k0, d), ('hi', k0+4, d), ('lo', k0, d), ('lo', k0+4, d)]),
                       (hl + 32, [('hi', k0, d+8), ('hi', k0+4, d+8), ('lo', k0, d+8), ('lo', k0+4, d+8)]),
                       (REST + kp * 2 * HD + (n2 * 8 + sw) * 4, [('rest', k0, d), ('rest', k0+4, d), ('rest', k0, d+8), ('rest', k0+4, d+8)])):
        for i, v in enumerate(vals):
            assert base + i not in vmem; vmem[base + i] = v
        assert base + 3 < VP
assert len(vmem) == N * HD * 3
for it in range(items // T):
    for w in range(8):
        for off in (0, 4 * PQ, 8, 4 * PQ + 8):
            banks = set()
            for lane in range(32):
                g, n2, t, kk = vitem(w * 32 + lane + it * T)
                banks.add(((kk * 8 + t) * PQ + n2 * 16 + g + off) % 32)
            assert len(banks) == 32, (it, w, off, sorted(banks))
        for which in range(3):
            for ph in range(4):
                grp = set()
                for lane in range(ph * 8, ph * 8 + 8):
                    g, n2, t, kk = vitem(w * 32 + lane + it * T)
                    kp = kk * 4 + t; sw = g ^ (2 * t)
                    a = [kp * 4 * HD + (n2 * 16 + sw) * 4, kp * 4 * HD + (n2 * 16 + sw) * 4 + 32, REST + kp * 2 * HD + (n2 * 8 + sw) * 4][which]
                    grp.add((a // 4) % 8)
                assert len(grp) == 8
for kk in range(N // 8):
    for n in range(HD // 8):
        for ph in range(4):
            g1, g2 = set(), set()
            for lane in range(ph * 8, ph * 8 + 8):
                g, t = lane // 4, lane % 4
                vhl = (kk * 4 + t) * 4 * HD + (g ^ (2 * t)) * 4 + n * 32
                vrs = REST + (kk * 4 + t) * 2 * HD + (g ^ (2 * t)) * 4 + (n // 2) * 32
                hl = [vmem[vhl + i] for i in range(4)]; rs = [vmem[vrs + i] for i in range(4)]
                k0, d = kk * 8 + t, n * 8 + g
                # bv[0] = {x, z, rest x|z}, bv[1] = {y, w, rest y|w}
                assert hl[0] == ('hi', k0, d) and hl[2] == ('lo', k0, d) and hl[1] == ('hi', k0+4, d) and hl[3] == ('lo', k0+4, d)
                r0, r1 = (rs[2], rs[3]) if n % 2 else (rs[0], rs[1])
                assert r0 == ('rest', k0, d) and r1 == ('rest', k0+4, d)
                g1.add((vhl // 4) % 8); g2.add((vrs // 4) % 8)
            assert len(g1) == 8 and len(g2) == 8
# Q: writer lane == reader lane, words (warp, ks, part, lane)
qmem = {}
for warp in range(8):
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for ks in range(HD // 8):
            dst = (warp * (HD // 8) + ks) * 256 + lane * 4
            for e in range(4):
                src = (warp * 16 + g + 8 * (e & 1), ks * 8 + t + 4 * (e >> 1))
                for part, off in (('hi', 0), ('lo', 128)):
                    assert dst + off + e not in qmem; qmem[dst + off + e] = (part, src)
            # reader: a[e] = {h[e], l[e]} with the A fragment's (row, col) for e = 0..3
            for e, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 4), (8, 4))):
                assert qmem[dst + e] == ('hi', (warp*16 + g + dr, ks*8 + t + dc)) and qmem[dst + 128 + e][0] == 'lo'
assert len(qmem) == QP and max(qmem) < QP
assert M * PQ <= LAND + KP + VP
print('smem bytes, no mask:', (QP + LAND + KP + VP) * 4, 'limit', 227 * 1024, '; with a mask:', (M * PQ + LAND + KP + VP) * 4 + M * (N * 4 + 16))
print('layout OK')
