#!/usr/bin/env python3
"""Staleness summary of the FedBuff runs of a results file (federation/fedbuff/), summed over seeds:
   python3 Experiments/tools/fedbuff_staleness.py results/federated_digits_async.h5"""
import h5py, numpy as np, sys, collections
f=h5py.File(sys.argv[1],'r')
agg=collections.OrderedDict()
for rid in f['runs']:
    g=f['runs'][rid]
    if 'federation/fedbuff' not in g: continue
    fb=g['federation/fedbuff']
    name=None
    for k in ('variant','name'):
        if k in g.attrs: name=g.attrs[k]; break
    name=str(name).split('_seed')[0]
    h=np.array(fb['staleness_histogram'][()]) if 'staleness_histogram' in fb else np.zeros(1,int)
    a=agg.setdefault(name,{'steps':0,'hist':np.zeros(0,int),'busy':0,'end':0,'dropped':0})
    a['steps']+=int(fb.attrs['server_steps']); a['busy']+=int(fb['busy'][()].sum())
    a['end']+=int(fb.attrs['in_flight_at_end'])+int(fb.attrs['buffered_at_end'])
    a['dropped']+=int(g['federation/dropped'][()].sum()) if 'federation/dropped' in g else 0
    n=max(len(a['hist']),len(h)); hh=np.zeros(n,int); hh[:len(a['hist'])]+=a['hist']; hh[:len(h)]+=h; a['hist']=hh
print('| configuration | server steps | updates applied | mean τ | τ = 0 | max τ | busy | not applied at end | dropped |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
for k,a in sorted(agg.items()):
    h=a['hist']; n=h.sum(); m=(np.arange(len(h))*h).sum()/n
    print(f"| {k} | {a['steps']} | {n} | {m:.2f} | {100*h[0]/n:.0f} % | {len(h)-1} | {a['busy']} | {a['end']} | {a['dropped']} |")
