# Words glued by an alternating-font macro (.BR, .RB, .IR, .RI, .BI, .IB): they join their arguments
# without a space, so an argument meant as a further word ("... GPUs)," or the same as) runs into the
# one before it ("GPUs),orthesameas"). groff warns about none of it. Prints FILE:LINE: the line, for
# each junction where an argument ending in , ; . ) ] meets one that starts with a letter, or one
# ending in two letters or digits meets one starting with two (a word run into a word; a one-letter
# placeholder glued on purpose, gpu-N-mig-Cc, and file:line are not); exit 1 when there is one. Arguments are read as groff reads them: separated by
# spaces, a double-quoted argument may hold spaces ("" inside is a quote).
function args_of(s, out,    n, i, c, cur, quoted, started) {
  n = 0; cur = ""; quoted = 0; started = 0
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (quoted) {
      if (c == "\"" && substr(s, i + 1, 1) == "\"") { cur = cur "\""; i++; continue }
      if (c == "\"") { quoted = 0; continue }
      cur = cur c
      continue
    }
    if (c == " " || c == "\t") {
      if (started) { out[++n] = cur; cur = ""; started = 0 }
      continue
    }
    if (c == "\"" && !started) { quoted = 1; started = 1; continue }
    cur = cur c; started = 1
  }
  if (started) out[++n] = cur
  return n
}

/^\.(BR|RB|IR|RI|BI|IB)[ \t]/ {
  rest = $0
  sub(/^\.[A-Z][A-Z][ \t]+/, "", rest)
  split("", a)
  n = args_of(rest, a)
  for (i = 1; i < n; i++) {
    left = a[i]; right = a[i + 1]
    gsub(/\\&/, "", left); gsub(/\\&/, "", right)  # the zero-width escape glues nothing
    if ((left ~ /[,;.)\]]$/ && right ~ /^[[:alpha:]]/) ||
        (left ~ /[[:alnum:]][[:alnum:]]$/ && right ~ /^[[:alnum:]][[:alnum:]]/)) {
      printf "%s:%d: words glued by %s: \"%s\" and \"%s\": %s\n", FILENAME, FNR, substr($0, 1, 3), left, right, $0
      bad = 1
      break
    }
  }
}

END { exit bad }
