"""Simulation (round 107): the slot bookkeeping of scripts/probe_tma_ring.py's ring, item by item for every program of the
sweep's 262,144 and 1M fp32 launches; asserts that no slot is asked for twice before it is read, and that each wait
finds the tile it expects. Plain Python, no GPU:  python scripts/sim_tma_ring.py
"""
SLOTS=14
def sim(tiles_seq):
    state=[None]*SLOTS  # slot -> (item, tile) pending/holding
    head=0; issued=tiles_seq[0]
    for t in range(tiles_seq[0]):
        assert state[t] is None; state[t]=(0,t)
    for k,n in enumerate(tiles_seq):
        nxt = tiles_seq[k+1] if k+1 < len(tiles_seq) else 0
        for t in range(issued, n):
            s=(head+t)%SLOTS; assert state[s] is None, ("rem",k,t,s,state[s]); state[s]=(k,t)
        next_head=(head+n)%SLOTS
        early=min(SLOTS-n, nxt)
        for j in range(early):
            s=(next_head+j)%SLOTS; assert state[s] is None, ("early",k,j,s,state[s]); state[s]=(k+1,j)
        for t in range(n):
            s=(head+t)%SLOTS; assert state[s]==(k,t), ("wait",k,t,s,state[s])
        for t in range(n):
            s=(head+t)%SLOTS; state[s]=None
            if early+t < nxt:
                state[s]=(k+1,early+t)
                assert (next_head+early+t)%SLOTS==s, ("map",k,t)
        issued=min(early+n, nxt); head=next_head
    return "ok"
import itertools
rows=[13,13,13,13,12]
for p in range(132):
    items=list(range(p, 512*5, 132)); seq=[rows[i%5] for i in items]
    try: sim(seq)
    except AssertionError as e: print(p, e); break
else: print("all ok 262144")
rows=[14]*18+[4]
for p in range(132):
    items=list(range(p, 128*19, 132)); seq=[rows[i%19] for i in items]
    try: sim(seq)
    except AssertionError as e: print("1M",p, e); break
else: print("all ok 1M")
