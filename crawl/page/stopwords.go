package page

import "strings"

// Stopwords are dropped from link words: they say nothing about the site
// linked to. The list is English function words (the usual ~170 of search
// engines and NLTK), the most frequent function words of French, German,
// Spanish, Italian, Portuguese and Dutch, and the web's own filler (the
// "click here", "read more", "www", "com" of anchor text). Words of one
// letter are dropped by length, so they are not listed.
var stopwords = func() map[string]struct{} {
	m := make(map[string]struct{}, 512)
	for _, list := range []string{stopEnglish, stopEuropean, stopWeb} {
		for _, w := range strings.Fields(list) {
			m[w] = struct{}{}
		}
	}
	return m
}()

func isStopword(w string) bool {
	_, ok := stopwords[w]
	return ok
}

const stopEnglish = `
about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each few for from further had hadn has hasn have haven having he her here hers herself
him himself his how if in into is isn it its itself just let ll me more most mustn my myself
no nor not now of off on once only or other ought our ours ourselves out over own re same
shan she should shouldn so some such than that the their theirs them themselves then there
these they this those through to too under until up us ve very was wasn we were weren what
when where which while who whom why will with won would wouldn you your yours yourself
yourselves
`

const stopEuropean = `
le la les de des du un une et en au aux pour par sur dans est ce ces qui que ne pas plus avec
son sa ses il elle nous vous ils leur se cette
der die das und ein eine einen zu den dem mit von im ist auf für nicht sich des es sie wir
ihr auch oder bei zum zur
el los las del por con para una al lo se su sus es como pero más
il di che per non gli della delle dei nel alla
os as do da dos das em um uma na no ao pelo pela
het een van op voor met dat niet zijn ook
`

const stopWeb = `
click here read more continue link links page pages home next prev previous back top view
see visit go www http https com org net html htm php url learn full article post posts share
via source website site ici lire suite mehr hier weiter aquí leer
`
