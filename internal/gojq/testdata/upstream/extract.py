import yaml, json, sys
cases = yaml.safe_load(open('/root/go/pkg/mod/github.com/itchyny/gojq@v0.12.20/cli/test.yaml'))
out = []
for c in cases:
    args = c.get('args') or []
    if any(not isinstance(a, str) for a in args): continue
    if 'env' in c: continue
    flags = [a for a in args if a.startswith('-') and a not in ('-',)]
    rest = [a for a in args if not (a.startswith('-') and a != '-')]
    if any(f not in ('-c', '-n', '--compact-output', '--null-input') for f in flags): continue
    if len(rest) != 1: continue
    q = rest[0]
    nullin = any(f in ('-n','--null-input') for f in flags)
    inp = 'null' if nullin else c.get('input', '')
    if inp is None: inp = ''
    out.append({'name': c['name'], 'query': q, 'input': str(inp)})
json.dump(out, open('cases.json','w'))
print(len(out), 'of', len(cases))
