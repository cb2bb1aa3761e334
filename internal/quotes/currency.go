package quotes

import "strings"

// iso4217 holds the active alphabetic codes of ISO 4217 List One (2025), fund and precious
// metal codes included; XTS (testing) and XXX (no currency) are left out because a quote in
// them means nothing. Withdrawn codes (HRK, SLL, CUC, ZWL, ...) are not accepted for new drafts.
var iso4217 = func() map[string]struct{} {
	const codes = `AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV
BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD
EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK
JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT
MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR
RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP
TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD
XCD XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG`
	m := map[string]struct{}{}
	for _, c := range strings.Fields(codes) {
		m[c] = struct{}{}
	}
	return m
}()

// IsCurrency reports whether code is an active ISO 4217 alphabetic code (upper case).
func IsCurrency(code string) bool {
	_, ok := iso4217[code]
	return ok
}
