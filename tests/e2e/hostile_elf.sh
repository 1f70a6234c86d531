# A malformed ELF section table never harms the program. The loader ignores section headers, so a program whose
# section table lies runs as usual alone; the engine reads that table (engine/elf_image.c) in every executable
# started under `record`, children included, and must skip the object, saying why once, never crash. Three tables
# whose offset + size wraps around 2^64 (each crashed the program under record before the checks were made
# without overflow), then random section-header mutations, all run as children of one recording. Needs only
# build/bin/ggprof and build/lib/libggprof.so, not the fixture.
. "$(dirname "$0")/../lib.sh"

# A tiny program whose .dynsym defines functions (-rdynamic), so the engine reads their names; /bin/true's
# .dynsym only imports.
printf 'int hostile_elf_fn(int x) { return x - 1; }\nint main(void) { return hostile_elf_fn(1); }\n' > "$OUT/tiny.c"
cc -O1 -rdynamic -o "$OUT/tiny" "$OUT/tiny.c"
expect "the tiny program builds" "$?" 0

# mutate SRC DST CASE: writes SRC with its section table made hostile (CASE below). CASE random N writes N files,
# DST-1 to DST-N, each with its own random mutation (seeded by its number).
mutate() {
    python3 - "$@" << 'EOF'
import os, random, struct, sys
src, dst, case = sys.argv[1:4]
orig = open(src, 'rb').read()
b = bytearray(orig)
M = 1 << 64
shoff, = struct.unpack_from('<Q', b, 0x28)
shnum, = struct.unpack_from('<H', b, 0x3C)
def sh(i, off, fmt, val=None):  # a field of section header i (sh_type 4 I, sh_offset 24 Q, sh_size 32 Q, sh_link 40 I)
    if val is None: return struct.unpack_from(fmt, b, shoff + 64 * i + off)[0]
    struct.pack_into(fmt, b, shoff + 64 * i + off, val % M)
def write(path):
    open(path, 'wb').write(b)
    os.chmod(path, 0o755)
dynsym = next(i for i in range(shnum) if sh(i, 4, '<I') == 11)
strtab = sh(dynsym, 40, '<I')
if case == 'shoff':    # e_shoff + e_shnum * e_shentsize wraps to 64: the table would start 4 MiB before the file
    struct.pack_into('<Q', b, 0x28, (64 - 0xffff * 64) % M)
    struct.pack_into('<H', b, 0x3C, 0xffff)
elif case == 'dynsym': # .dynsym's sh_offset + sh_size wraps to 64: ~2^59 symbols from its real start
    sh(dynsym, 32, '<Q', 64 - sh(dynsym, 24, '<Q'))
elif case == 'dynstr': # .dynstr 1 TiB before the file, its size wrapping back to the ELF header's 16 bytes
    sh(strtab, 24, '<Q', -(1 << 40))
    sh(strtab, 32, '<Q', (1 << 40) + 16)
if case != 'random':
    write(dst)
    sys.exit(0)
for n in range(1, int(sys.argv[4]) + 1): # one to three fields of e_shoff/e_shnum or of section headers, made odd
    b = bytearray(orig)
    rnd = random.Random(n)
    def odd(bits):
        big = (1 << bits) - 1
        v = rnd.choice([0, 1, big, big - rnd.randrange(1 << min(bits - 1, 24)), rnd.randrange(1 << bits),
                        (1 << (bits - 1)) + rnd.randrange(64), rnd.randrange(1 << 16), len(b) - rnd.randrange(64)])
        return v & big
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.1:
            if rnd.random() < 0.5: struct.pack_into('<Q', b, 0x28, odd(64))
            else: struct.pack_into('<H', b, 0x3C, odd(16))
            continue
        i = rnd.choice([dynsym, strtab, rnd.randrange(shnum)])
        off, fmt, bits = rnd.choice([(4, '<I', 32), (24, '<Q', 64), (32, '<Q', 64), (40, '<I', 32), (56, '<Q', 64)])
        struct.pack_into(fmt, b, shoff + 64 * i + off, odd(bits))
    write('%s-%d' % (dst, n))
EOF
}

for c in shoff:/bin/true dynsym:/bin/true dynstr:"$OUT/tiny"; do
    case=${c%%:*} src=${c#*:}
    mutate "$src" "$OUT/$case" "$case"
    "$OUT/$case"
    alone=$?
    "$GGPROF" record -q -o "$OUT/$case.db" -- "$OUT/$case" > "$OUT/$case.log" 2>&1
    expect "$case: the same status alone and under record" "$alone:$?" "0:0"
    expect "$case: the engine says once that it skipped the image" \
        "$(grep -c "^ggprof: $case: malformed ELF image" "$OUT/$case.log")" 1
done

# 1,000 random section-header mutations, of /bin/true and of the tiny program, run one after another by one shell
# under one recording: each exits 0 alone and under record.
mkdir -p "$OUT/random"
mutate /bin/true "$OUT/random/true" random 500
mutate "$OUT/tiny" "$OUT/random/tiny" random 500
loop='for f in "$0"/*; do "$f" || echo "$f exited $?"; done'
sh -c "$loop" "$OUT/random" > "$OUT/random-alone.txt" 2>&1
expect "random: all 1000 exit 0 alone" "$(ls "$OUT/random" | wc -l):$(grep -c exited "$OUT/random-alone.txt")" 1000:0
"$GGPROF" record -q -o "$OUT/random.db" -- sh -c "$loop" "$OUT/random" > "$OUT/random-record.txt" 2>&1
expect "random: record exits 0" "$?" 0
expect "random: all 1000 exit 0 under record" "$(grep -c exited "$OUT/random-record.txt")" 0
