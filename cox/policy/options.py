"""The (program, option) forms known to be read-only, and the option parser that checks them.

A read-only rating lets a command run unasked, so it comes only from this allowlist: each program
lists the options it has that neither write a file nor run another program (``sort -o``,
``sort --compress-program``, ``rg --pre``, ``git log --output``, ``file -C`` and ``tree -o`` are
not listed). An option that is not listed makes the command exec.

Long options are resolved the way GNU getopt and git's parse-options resolve them: any
unambiguous prefix names the option (``sort --out=F`` is ``--output``). A prefix is matched
against the listed options only, which is safe as long as every listed name is a real option of
the program: a prefix that also fits an unlisted option is ambiguous to the program too (it
fails), and a prefix that fits no listed option is exec here. Which options take a value must be
right, since a value is skipped unchecked: an option with an optional value takes it only
attached (``--color[=WHEN]``).

A word whose value is only known when the command runs (``$x``, an unquoted glob that a file named
``--output=x`` turns into an option) passes only for a program marked ``total``: one with no
option that writes a file or runs a program, so whatever the word turns out to be, nothing is
written or run (``wc`` and ``du`` qualify: their ``--files0-from`` only reads, and is left out of
the list so that a literal one is exec and the read guard sees every name it is given).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["GIT", "PROGRAMS", "Spec", "operands"]

Kind = Literal["flag", "arg", "opt", "pair"]
Check = Callable[[list[str]], bool]


@dataclass(frozen=True, slots=True)
class Spec:
    """One program's read-only options. ``short`` is a getopt optstring (``"ab:c::"``: ``b``
    takes a value, ``c`` an optional attached one); ``long`` lists names, ``name=`` for a value,
    ``name[=]`` for an optional attached one. ``numeric`` accepts ``-5`` (head, grep …);
    ``negate`` accepts git's ``--no-NAME`` of a listed name; ``operands`` vets the operands.
    ``name=2`` takes two values (jq's ``--arg NAME VALUE``)."""

    short: str = ""
    long: str = ""
    numeric: bool = False
    abbrev: bool = True
    total: bool = False
    negate: bool = False
    operands: Check | None = None
    longs: dict[str, Kind] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for item in self.long.split():
            if item.endswith("=2"):
                self.longs[item[:-2]] = "pair"
            elif item.endswith("[=]"):
                self.longs[item[:-3]] = "opt"
            elif item.endswith("="):
                self.longs[item[:-1]] = "arg"
            else:
                self.longs[item] = "flag"

    def resolve(self, name: str) -> Kind | None:
        """The kind of long option ``name`` (an exact name or an unambiguous prefix)."""
        kind = self.longs.get(name)
        if kind is not None:
            return kind
        if self.negate and name.startswith("no-") and self.resolve(name[3:]) is not None:
            return "flag"
        if not self.abbrev or not name:
            return None
        found = [n for n in self.longs if n.startswith(name)]
        return self.longs[found[0]] if len(found) == 1 else None


def operands(spec: Spec, args: Sequence[str], vague: Collection[int] = ()) -> list[str] | None:
    """The operands of ``args`` when every option is a listed read-only one, else None.
    ``vague`` holds the indexes of words only known when the command runs."""
    out: list[str] = []
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if i in vague:
            if not spec.total:
                return None
            out.append(a)
            i += 1
            continue
        if a == "--":
            out.extend(args[i + 1:])
            break
        if a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            kind = spec.resolve(name)
            if kind is None or (kind == "flag" and eq):
                return None
            i += 3 if kind == "pair" else 2 if kind == "arg" and not eq else 1
            continue
        if a.startswith("-") and len(a) > 1:
            if spec.numeric and a[1:].isdigit():
                i += 1
                continue
            j, step = 1, 1
            while j < len(a):
                k = spec.short.find(a[j])
                if k < 0 or a[j] == ":":
                    return None
                if spec.short[k + 1:k + 2] == ":":
                    if j + 1 == len(a) and spec.short[k + 2:k + 3] != ":":
                        step = 2  # the value is the next word
                    break
                j += 1
            i += step
            continue
        out.append(a)
        i += 1
    return out


def _at_most(count: int) -> Check:
    return lambda ops: len(ops) <= count


def _none(ops: list[str]) -> bool:
    return not ops


def _date_operands(ops: list[str]) -> bool:
    return all(o.startswith("+") for o in ops)  # ``date MMDDhhmm`` sets the clock


_SUMS = "bctwz", "binary check tag text warn zero quiet status strict ignore-missing"

PROGRAMS: dict[str, Spec] = {
    # builtins and programs with nothing to write or run, whatever their arguments
    "echo": Spec(total=True, abbrev=False, short="neE"),
    "true": Spec(total=True), "false": Spec(total=True), ":": Spec(total=True),
    "pwd": Spec("LP", total=True, abbrev=False),
    "cd": Spec("LPe@", total=True, abbrev=False),
    "pushd": Spec("n", total=True, numeric=True, abbrev=False),
    "popd": Spec("n", total=True, numeric=True, abbrev=False),
    "type": Spec("afPpt", total=True, abbrev=False),
    "sleep": Spec(total=True, long="help version"),
    "which": Spec("as", total=True, abbrev=False),
    "whoami": Spec(long="help version", operands=_none),
    "groups": Spec(long="help version", total=True),
    "arch": Spec(long="help version", operands=_none),
    "nproc": Spec(long="all ignore= help version", operands=_none),
    "uname": Spec("asnrvmpio", "all kernel-name nodename kernel-release kernel-version machine processor "
                  "hardware-platform operating-system help version", total=True),
    "id": Spec("aZgGnruz", "context group groups name real user zero help version", total=True),
    "uptime": Spec("psV", "pretty since help version", operands=_none),
    "hostname": Spec("aAdfiIsy", "alias all-fqdns domain fqdn long ip-address all-ip-addresses short nis",
                     operands=_none),
    "basename": Spec("as:z", "multiple suffix= zero help version", total=True),
    "dirname": Spec("z", "zero help version", total=True),
    "realpath": Spec("emLPqsz", "canonicalize-existing canonicalize-missing logical physical quiet "
                     "relative-to= relative-base= strip no-symlinks zero help version", total=True),
    "readlink": Spec("femnqsvz", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet "
                     "silent verbose zero help version", total=True),
    # reading files
    "cat": Spec("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs "
                "show-nonprinting help version", total=True),
    "head": Spec("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated help version", numeric=True,
                 total=True),
    "tail": Spec("c:fFn:qs:vz", "bytes= follow[=] lines= max-unchanged-stats= pid= quiet retry silent "
                 "sleep-interval= verbose zero-terminated help version", numeric=True, total=True),
    "wc": Spec("cmlLw", "bytes chars lines max-line-length words help version", total=True),  # not --files0-from
    "nl": Spec("b:d:f:h:i:l:n:ps:v:w:", "body-numbering= section-delimiter= footer-numbering= "
               "header-numbering= line-increment= join-blank-lines= number-format= no-renumber "
               "number-separator= starting-line-number= number-width= help version", total=True),
    "tac": Spec("brs:", "before regex separator= help version", total=True),
    "rev": Spec(long="help version", total=True),
    "cut": Spec("b:c:d:f:nsz", "bytes= characters= delimiter= fields= complement only-delimited "
                "output-delimiter= zero-terminated help version", total=True),
    "tr": Spec("cCdst", "complement delete squeeze-repeats truncate-set1 help version", total=True),
    "fold": Spec("bsw:", "bytes spaces width= help version", numeric=True, total=True),
    "expand": Spec("it:", "initial tabs= help version", numeric=True, total=True),
    "unexpand": Spec("at:", "all first-only tabs= help version", numeric=True, total=True),
    "paste": Spec("d:sz", "delimiters= serial zero-terminated help version", total=True),
    "join": Spec("a:e:ij:o:t:v:z1:2:", "check-order nocheck-order header ignore-case zero-terminated help version",
                 total=True),
    "comm": Spec("123z", "check-order nocheck-order output-delimiter= total zero-terminated help version",
                 total=True),
    "seq": Spec("f:s:w", "format= separator= equal-width help version", numeric=True, total=True),
    "cmp": Spec("bi:ln:s", "print-bytes ignore-initial= verbose bytes= quiet silent help version", total=True),
    "base64": Spec("diw:", "decode ignore-garbage wrap= help version", total=True),
    "md5sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "sha1sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "sha224sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "sha256sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "sha384sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "sha512sum": Spec(_SUMS[0], _SUMS[1] + " help version", total=True),
    "b2sum": Spec(_SUMS[0] + "l:", _SUMS[1] + " length= help version", total=True),
    "cksum": Spec("a:cl:wz", "algorithm= check debug length= tag untagged warn zero quiet status "
                  "strict ignore-missing help version", total=True),
    "column": Spec("tn:O:N:l:E:deH:R:T:W:LJr:i:p:c:o:s:xhV", "table table-name= table-order= table-columns= "
                   "table-columns-limit= table-noextreme= table-noheadings table-header-repeat table-hide= "
                   "table-right= table-truncate= table-wrap= keep-empty-lines json tree= tree-id= "
                   "tree-parent= output-width= output-separator= separator= fillrows help version", total=True),
    "stat": Spec("Lfc:t", "dereference file-system format= printf= terse cached= help version", total=True),
    "df": Spec("aB:hHiklPt:Tx:v", "all block-size= human-readable si inodes local no-sync output[=] portability "
               "print-type sync total type= exclude-type= help version", total=True),
    # not --files0-from (names read from a file the deny rules cannot see), -X/--exclude-from
    "du": Spec("0aAB:bcDd:HhkLlmPSst:x", "null all apparent-size block-size= bytes total dereference-args "
               "max-depth= human-readable inodes dereference count-links no-dereference separate-dirs si "
               "summarize threshold= time[=] time-style= one-file-system exclude= help version", total=True),
    "ls": Spec("aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1", "all almost-all author escape block-size= "
               "ignore-backups color[=] directory dired classify[=] file-type format= full-time "
               "group-directories-first no-group human-readable si dereference-command-line "
               "dereference-command-line-symlink-to-dir hide= hyperlink[=] indicator-style= inode ignore= "
               "kibibytes dereference numeric-uid-gid literal hide-control-chars show-control-chars "
               "quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= "
               "context zero help version", total=True),
    # not -C/--compile (writes magic.mgc), -m (loads other magic), -f (names from a file),
    # -z/-Z (runs decompressors), -p (changes access times)
    "file": Spec("bcdEe:F:hiIkLlNnP:rsS0", "apple brief checking-printout debug exclude= exclude-quiet= extension "
                 "no-dereference mime mime-type mime-encoding keep-going list dereference no-buffer no-pad "
                 "parameter= raw special-files no-sandbox print0 separator= help version"),
    # not -s/--set, and operands only as +FORMAT
    "date": Spec("d:f:I::r:Ru", "date= debug file= iso-8601[=] resolution rfc-email rfc-3339= reference= "
                 "universal utc help version", operands=_date_operands),
    # not -o/--output, --compress-program, -T/--temporary-directory (writes), --files0-from
    "sort": Spec("bcCdfghiMmnRrsuVzk:t:S:", "ignore-leading-blanks check[=] dictionary-order debug ignore-case "
                 "general-numeric-sort human-numeric-sort ignore-nonprinting key= merge month-sort numeric-sort "
                 "random-sort random-source= reverse sort= stable field-separator= buffer-size= unique "
                 "version-sort zero-terminated parallel= batch-size= help version"),
    "uniq": Spec("cdDf:is:uw:z", "all-repeated[=] check-chars= count group[=] ignore-case repeated skip-chars= "
                 "skip-fields= unique zero-terminated help version", numeric=True, operands=_at_most(1)),
    "diff": Spec("abBcC:dD:eEfF:HiI:L:nNpPqrsS:tTuU:vwW:x:y", "normal brief report-identical-files context[=] "
                 "unified[=] ed rcs side-by-side left-column suppress-common-lines show-c-function "
                 "show-function-line= label= expand-tabs initial-tab tabsize= suppress-blank-empty new-file "
                 "unidirectional-new-file ignore-case ignore-file-name-case no-ignore-file-name-case "
                 "ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space "
                 "ignore-blank-lines ignore-matching-lines= strip-trailing-cr text recursive no-dereference "
                 "exclude= starting-file= ifdef= old-line-format= new-line-format= unchanged-line-format= "
                 "line-format= old-group-format= new-group-format= unchanged-group-format= changed-group-format= "
                 "horizon-lines= width= minimal speed-large-files color[=] palette= help version", numeric=True),
    "grep": Spec("EFGPe:f:iywxzsvVm:bnHhoqL lcT Z0123456789A:B:C:aD:d:IrRU".replace(" ", ""),
                 "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case "
                 "word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number "
                 "line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text "
                 "directories= devices= recursive dereference-recursive include= exclude= exclude-from= "
                 "exclude-dir= files-without-match files-with-matches count initial-tab null before-context= "
                 "after-context= context= group-separator= no-group-separator color[=] colour[=] binary "
                 "help version", numeric=True, total=True),
    # ripgrep 13 parses options exactly; not --pre, --pre-glob, -z/--search-zip (run programs),
    # --hostname-bin (14: runs a program)
    "rg": Spec("A:B:bC:cd:E:e:f:Fg:HhIij:LlM:m:NnopqPr:SsT:t:UuVvwx0a",
               "after-context= before-context= binary block-buffered byte-offset case-sensitive color= colors= "
               "column context= context-separator= count count-matches crlf debug dfa-size-limit= encoding= "
               "engine= field-context-separator= field-match-separator= file= files files-with-matches "
               "files-without-match fixed-strings follow glob= glob-case-insensitive heading hidden iglob= "
               "ignore-case ignore-file= ignore-file-case-insensitive include-zero invert-match json "
               "line-buffered line-number line-regexp max-columns= max-columns-preview max-count= max-depth= "
               "max-filesize= mmap multiline multiline-dotall no-binary no-column no-config no-encoding "
               "no-filename no-heading no-hidden no-ignore no-ignore-dot no-ignore-exclude no-ignore-files "
               "no-ignore-global no-ignore-messages no-ignore-parent no-ignore-vcs no-line-number "
               "no-max-columns-preview no-messages no-mmap no-multiline no-multiline-dotall no-pcre2 "
               "no-pcre2-unicode no-require-git no-unicode null null-data one-file-system only-matching "
               "passthru path-separator= pcre2 pretty quiet regex-size-limit= regexp= replace= "
               "smart-case sort= sortr= stats text threads= trace trim type= type-add= "
               "type-clear= type-list type-not= unrestricted vimgrep with-filename word-regexp help version",
               abbrev=False, numeric=False),
    # fd: not -x/--exec, -X/--exec-batch, -l/--list-details (runs ls)
    "fd": Spec("HIsiFgaLpd:t:e:E:c:j:0S:uq1", "hidden no-ignore no-ignore-vcs case-sensitive ignore-case glob "
               "regex fixed-strings absolute-path follow full-path print0 max-depth= min-depth= exact-depth= "
               "type= extension= exclude= color= threads= size= changed-within= changed-before= owner= "
               "max-results= quiet show-errors strip-cwd-prefix[=] base-directory= search-path= prune "
               "one-file-system unrestricted help version", abbrev=False),
    "jq": Spec("rjacnesSCMRhVL:f:", "raw-output join-output ascii-output compact-output null-input exit-status "
               "slurp sort-keys color-output monochrome-output raw-input tab indent= seq stream arg=2 "
               "argjson=2 slurpfile=2 rawfile=2 args jsonargs from-file= unbuffered help version", abbrev=False),
    # tree: not -o (writes), -R (writes 00Tree.html everywhere), --fromfile
    "tree": Spec("adlfxL:P:I:ipsughDFqNQrtcUvCnJXA", "noreport dirsfirst filelimit= charset= prune du si "
                 "gitignore matchdirs ignore-case help version", abbrev=False),
    "ps": Spec(total=True, abbrev=False),  # procps: no option writes a file or runs a program
    "free": Spec("bkmgh ltwvs:c:".replace(" ", ""), "bytes kibi mebi gibi tebi pebi kilo mega giga tera peta "
                 "human wide si lohi total seconds= count= committed help version", total=True),
    "locale": Spec("akmcvV", "all-locales charmaps keyword-name category-name verbose help version", total=True),
}
PROGRAMS["egrep"] = PROGRAMS["fgrep"] = PROGRAMS["grep"]

# --- git -----------------------------------------------------------------------------------------

_DIFF = ("p u s patch no-patch U: unified= output-indicator-new= output-indicator-old= output-indicator-context= "
         "raw patch-with-raw t indent-heuristic no-indent-heuristic minimal patience histogram anchored= "
         "diff-algorithm= stat[=] stat-width= stat-name-width= stat-graph-width= stat-count= compact-summary "
         "numstat shortstat dirstat[=] cumulative dirstat-by-file[=] summary patch-with-stat z name-only "
         "name-status submodule[=] color[=] no-color color-moved[=] no-color-moved color-moved-ws= "
         "no-color-moved-ws word-diff[=] word-diff-regex= color-words[=] no-renames rename-empty "
         "no-rename-empty check ws-error-highlight= full-index binary abbrev[=] break-rewrites[=] "
         "find-renames[=] find-copies[=] find-copies-harder irreversible-delete l: diff-filter= S: G: "
         "find-object= pickaxe-all pickaxe-regex O: skip-to= rotate-to= R relative[=] no-relative text a "
         "ignore-cr-at-eol ignore-space-at-eol ignore-space-change b ignore-all-space w ignore-blank-lines "
         "ignore-matching-lines= I: inter-hunk-context= function-context W exit-code quiet no-ext-diff "
         "no-textconv ignore-submodules[=] src-prefix= dst-prefix= no-prefix default-prefix line-prefix= "
         "ita-invisible-in-index ita-visible-in-index M:: C:: B:: D")
_REVS = ("n: max-count= skip= since= after= until= before= max-age= min-age= author= committer= grep-reflog= "
         "grep= all-match invert-grep i regexp-ignore-case basic-regexp E extended-regexp F fixed-strings "
         "P perl-regexp remove-empty merges no-merges min-parents= max-parents= no-min-parents no-max-parents "
         "first-parent exclude-first-parent-only not all branches[=] tags[=] remotes[=] glob= exclude= "
         "exclude-hidden= reflog alternate-refs single-worktree ignore-missing bisect cherry-mark cherry-pick "
         "left-only right-only cherry walk-reflogs g merge boundary simplify-by-decoration full-history "
         "dense sparse simplify-merges ancestry-path[=] show-pulls no-walk[=] do-walk topo-order date-order "
         "author-date-order reverse objects objects-edge unpacked count left-right graph show-linear-break[=] "
         "parents children timestamp since-as-filter=")
_LOG = ("follow decorate[=] no-decorate decorate-refs= decorate-refs-exclude= clear-decorations source "
        "mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size L: pretty[=] format= abbrev-commit "
        "no-abbrev-commit oneline encoding= expand-tabs[=] no-expand-tabs notes[=] no-notes show-notes[=] "
        "standard-notes no-standard-notes relative-date date= m c cc dd diff-merges= "
        "combined-all-paths no-diff-merges")


def _git_spec(words: str, *, numeric: bool = False, operands: Check | None = None) -> Spec:
    """A git sub-command's spec from one list: one letter (``p``, ``U:``, ``M::``) is a short
    option, anything longer a long one."""
    short, long = "", []
    for w in words.split():
        letter = w.rstrip(":")
        if len(letter) == 1:
            short += w
        else:
            long.append(w)
    return Spec(short, " ".join(long), numeric=numeric, negate=True, operands=operands)


GIT: dict[str, Spec] = {
    "status": _git_spec("s short b branch show-stash porcelain[=] long v verbose u:: untracked-files[=] "
                        "ignore-submodules[=] ignored[=] z column[=] no-column ahead-behind no-ahead-behind "
                        "renames no-renames find-renames[=]"),
    "log": _git_spec(" ".join((_DIFF, _REVS, _LOG)), numeric=True),
    "whatchanged": _git_spec(" ".join((_DIFF, _REVS, _LOG)), numeric=True),
    "show": _git_spec(" ".join((_DIFF, _REVS, _LOG)), numeric=True),
    "diff": _git_spec(_DIFF + " cached staged merge-base no-index"),
    "shortlog": _git_spec(" ".join((_REVS, "c committer e email n numbered s summary group= format[=] w::"))),
    "rev-list": _git_spec(" ".join((_REVS, "header pretty[=] format= abbrev-commit oneline abbrev[=] encoding= "
                                    "quiet disk-usage[=] no-object-names object-names in-commit-order "
                                    "use-bitmap-index missing= exclude-promisor-objects filter= no-filter "
                                    "filter-provided-objects")), numeric=True),
    "blame": _git_spec("b root show-stats score-debug f show-name n show-number p porcelain line-porcelain "
                       "c t l s e show-email w incremental reverse first-parent progress no-progress "
                       "date= contents= L: M:: C:: ignore-rev= ignore-revs-file= color-lines color-by-age "
                       "minimal abbrev= S:"),
    "ls-files": _git_spec("c cached d deleted o others i ignored s stage u unmerged k killed m modified "
                          "directory no-empty-directory eol z t v f x: exclude= X: exclude-from= "
                          "exclude-per-directory= exclude-standard error-unmatch with-tree= full-name "
                          "recurse-submodules abbrev[=] debug deduplicate sparse format= resolve-undo"),
    "ls-tree": _git_spec("d r t l long z name-only name-status object-only full-name full-tree abbrev[=] format="),
    "rev-parse": _git_spec("parseopt sq-quote keep-dashdash stop-at-non-option stuck-long revs-only no-revs "
                           "flags no-flags default= prefix= verify q quiet sq short[=] not abbrev-ref[=] "
                           "symbolic symbolic-full-name all branches[=] tags[=] remotes[=] glob= exclude= "
                           "exclude-hidden= disambiguate= local-env-vars path-format= git-dir git-common-dir "
                           "absolute-git-dir is-inside-git-dir is-inside-work-tree is-bare-repository "
                           "is-shallow-repository resolve-git-dir= git-path= show-cdup show-prefix show-toplevel "
                           "show-superproject-working-tree shared-index-path show-object-format[=] "
                           "show-ref-format since= after= until= before= end-of-options"),
    "describe": _git_spec("all tags contains abbrev= candidates= exact-match debug long match= exclude= always "
                          "first-parent dirty[=] broken[=]"),
    # not --textconv, --filters (run the configured filters)
    "cat-file": _git_spec("t s e p batch[=] batch-check[=] batch-command[=] batch-all-objects buffer "
                          "follow-symlinks unordered allow-unknown-type Z use-mailmap mailmap"),
    "merge-base": _git_spec("a all octopus independent is-ancestor fork-point"),
    "show-ref": _git_spec("head tags heads branches verify d dereference s hash[=] abbrev[=] q quiet "
                          "exclude-existing[=] exists"),
    "count-objects": _git_spec("v verbose H human-readable"),
    "version": _git_spec("build-options"),
    # not --upload-pack / --exec (run a program)
    "ls-remote": _git_spec("h heads t tags refs q quiet exit-code get-url symref sort= o: server-option="),
    # grep: not -O/--open-files-in-pager (runs a program), --textconv
    "grep": _git_spec("cached no-index untracked exclude-standard recurse-submodules v invert-match i "
                      "ignore-case y I w word-regexp a text r recursive max-depth= E extended-regexp G "
                      "basic-regexp F fixed-strings P perl-regexp n line-number column h H full-name l "
                      "files-with-matches name-only L files-without-match o only-matching c count color[=] "
                      "break heading p show-function W function-context A: after-context= B: before-context= "
                      "C: context= threads= f: e: and or not all-match q quiet z null m: max-count=",
                      numeric=True),
    "branch": _git_spec("list l a all r remotes v verbose show-current contains[=] no-contains[=] "
                        "merged[=] no-merged[=] points-at= sort= format= column[=] no-column color[=] "
                        "no-color i ignore-case abbrev= no-abbrev omit-empty"),
    "tag": _git_spec("l list n:: contains[=] no-contains[=] merged[=] no-merged[=] points-at= sort= format= "
                     "column[=] no-column color[=] i ignore-case omit-empty"),
    "worktree list": _git_spec("porcelain v verbose z expire="),
    "remote": _git_spec("v verbose"),
    "remote get-url": _git_spec("push all"),
    "remote show": _git_spec("n"),
    "config": _git_spec("global system local worktree f: file= blob= show-origin show-scope z null name-only "
                        "includes no-includes type= bool int bool-or-int path expiry-date default= "
                        "get get-all get-regexp get-urlmatch l list get-color get-colorbool fixed-value"),
}
GIT["stash list"] = GIT["log"]
GIT["stash show"] = GIT["diff"]
GIT["reflog show"] = GIT["log"]
GIT["reflog"] = GIT["log"]
