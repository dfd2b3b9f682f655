package demo

import (
	"slices"
	"strings"

	"github.com/crmservice/crm/impl"
)

// The demo's fixed content.

func demoStaff() []demoUser {
	return []demoUser{
		{name: "Anna Berg", login: demoAdminLogin, role: impl.RoleAdmin, dept: -1, usersReport: true, deptsReport: true, plan: true},
		{name: "Lars Nilsson", login: "lars@demo.example", role: impl.RoleHead, dept: 0, usersReport: true, plan: true},
		{name: "Ieva Kazlauskiene", login: "ieva@demo.example", role: impl.RoleHead, dept: 1, usersReport: true, plan: true},
		{name: "Janis Ozols", login: "janis@demo.example", role: impl.RoleMember, dept: 0, plan: true},
		{name: "Mikko Virtanen", login: "mikko@demo.example", role: impl.RoleMember, dept: 0, timeZone: "Europe/Helsinki", plan: true},
		{name: "Kristiina Tamm", login: "kristiina@demo.example", role: impl.RoleMember, dept: 1, plan: true},
		{name: "Tomas Petrauskas", login: demoMemberLogin, role: impl.RoleMember, dept: 1},
	}
}

// demoDirectoryValues lists the values of every directory, grouped by code in
// the order of their sort.
func demoDirectoryValues() []demoDirValue {
	return []demoDirValue{
		{code: impl.DirCompanyTypes, name: "Client", weight: 40, controlled: true},
		{code: impl.DirCompanyTypes, name: "Key client", weight: 10, controlled: true},
		{code: impl.DirCompanyTypes, name: "Prospect", weight: 25},
		{code: impl.DirCompanyTypes, name: "Partner", weight: 10},
		{code: impl.DirCompanyTypes, name: "Supplier", weight: 10},
		{code: impl.DirCompanyTypes, name: "Competitor", weight: 5},

		{code: impl.DirCompanyStatuses, name: "New", weight: 20},
		{code: impl.DirCompanyStatuses, name: "Active", weight: 45},
		{code: impl.DirCompanyStatuses, name: "Negotiating", weight: 15},
		{code: impl.DirCompanyStatuses, name: "On hold", weight: 10},
		{code: impl.DirCompanyStatuses, name: "Inactive", weight: 10},

		{code: impl.DirCompanyCategories, name: "A: strategic", weight: 15},
		{code: impl.DirCompanyCategories, name: "B: regular", weight: 50},
		{code: impl.DirCompanyCategories, name: "C: occasional", weight: 35},

		{code: impl.DirTaskKinds, name: "Call", weight: 30},
		{code: impl.DirTaskKinds, name: "Meeting", weight: 15},
		{code: impl.DirTaskKinds, name: "E-mail", weight: 25},
		{code: impl.DirTaskKinds, name: "Follow-up", weight: 15},
		{code: impl.DirTaskKinds, name: "Demo", weight: 5},
		{code: impl.DirTaskKinds, name: "Contract review", weight: 10},

		{code: impl.DirDealTypes, name: "New business", weight: 40},
		{code: impl.DirDealTypes, name: "Upsell", weight: 25},
		{code: impl.DirDealTypes, name: "Renewal", weight: 20},
		{code: impl.DirDealTypes, name: "Service contract", weight: 15},

		{code: impl.DirDealStages, name: "Lead", weight: 20},
		{code: impl.DirDealStages, name: "Qualified", weight: 15},
		{code: impl.DirDealStages, name: "Proposal", weight: 20},
		{code: impl.DirDealStages, name: "Negotiation", weight: 15},
		{code: impl.DirDealStages, name: "Won", weight: 20},
		{code: impl.DirDealStages, name: "Lost", weight: 10},

		{code: impl.DirPositions, name: "CEO", weight: 15},
		{code: impl.DirPositions, name: "Purchasing manager", weight: 25},
		{code: impl.DirPositions, name: "Office manager", weight: 25},
		{code: impl.DirPositions, name: "Chief accountant", weight: 15},
		{code: impl.DirPositions, name: "IT manager", weight: 10},
		{code: impl.DirPositions, name: "Facility manager", weight: 10},

		{code: impl.DirContactStatuses, name: "Decision maker", weight: 30},
		{code: impl.DirContactStatuses, name: "Influencer", weight: 30},
		{code: impl.DirContactStatuses, name: "Day-to-day contact", weight: 35},
		{code: impl.DirContactStatuses, name: "Left the company", weight: 5},

		{code: impl.DirDocumentTypes, name: "Invoice", weight: 50, invoice: true},
		{code: impl.DirDocumentTypes, name: "Contract", weight: 15},
		{code: impl.DirDocumentTypes, name: "Act", weight: 15},
		{code: impl.DirDocumentTypes, name: "Offer", weight: 20},

		{code: impl.DirDocumentStatuses, name: "Draft", weight: 1},
		{code: impl.DirDocumentStatuses, name: "Issued", weight: 1},
		{code: impl.DirDocumentStatuses, name: "Signed", weight: 1},
		{code: impl.DirDocumentStatuses, name: "Paid", weight: 1},
		{code: impl.DirDocumentStatuses, name: "Cancelled", weight: 1},

		{code: impl.DirPaymentForms, name: "Bank transfer", weight: 60},
		{code: impl.DirPaymentForms, name: "Card", weight: 25},
		{code: impl.DirPaymentForms, name: "Cash", weight: 5},
		{code: impl.DirPaymentForms, name: "Direct debit", weight: 10},

		{code: impl.DirMoneyCategories, name: "Sales", weight: 1},
		{code: impl.DirMoneyCategories, name: "Services", weight: 1},
		{code: impl.DirMoneyCategories, name: "Purchases", weight: 1},
		{code: impl.DirMoneyCategories, name: "Rent", weight: 1},
		{code: impl.DirMoneyCategories, name: "Salaries", weight: 1},
		{code: impl.DirMoneyCategories, name: "Marketing", weight: 1},
		{code: impl.DirMoneyCategories, name: "Taxes", weight: 1},
		{code: impl.DirMoneyCategories, name: "Software", weight: 1},

		{code: impl.DirAgents, name: "Baltic Sales Partners", weight: 50},
		{code: impl.DirAgents, name: "Nordic Reseller Network", weight: 30},
		{code: impl.DirAgents, name: "Office Expo Agency", weight: 20},

		{code: impl.DirCompanyGroups, name: "Retail", weight: 20},
		{code: impl.DirCompanyGroups, name: "Wholesale", weight: 20},
		{code: impl.DirCompanyGroups, name: "Public sector", weight: 15},
		{code: impl.DirCompanyGroups, name: "Education", weight: 10},
		{code: impl.DirCompanyGroups, name: "Healthcare", weight: 15},
		{code: impl.DirCompanyGroups, name: "IT and telecom", weight: 20},
	}
}

type demoCountry struct {
	name, form, fullName string // fullName formats the registered name
	weight               int
	cities, streets      []string
	mobile, landline     string // phone patterns, '#' a digit
	vat                  string // pattern of the VAT number
	banks                []demoBank
	director             string // the title of a company's head
	maleFirst            []string
	femaleFirst          []string
	maleLast             []string
	femaleLast           []string // nil: as maleLast
}

type demoBank struct {
	name, bic, iban string // iban is a pattern, '#' a digit
}

func demoCountries() []demoCountry {
	f := strings.Fields
	return []demoCountry{{
		name: "Latvia", form: "SIA", fullName: `SIA "%s"`, weight: 35,
		cities:  f("Riga Riga Riga Jelgava Liepaja Daugavpils Ventspils Valmiera Jurmala"),
		streets: []string{"Brivibas iela", "Elizabetes iela", "Krisjana Valdemara iela", "Terbatas iela", "Dzirnavu iela", "Maskavas iela", "Lacplesa iela", "Ganibu dambis"},
		mobile:  "+371 2### ####", landline: "+371 67## ####", vat: "LV40#########",
		banks: []demoBank{
			{"Swedbank", "HABALV22", "LV##HABA#############"}, {"SEB banka", "UNLALV2X", "LV##UNLA#############"},
			{"Citadele banka", "PARXLV22", "LV##PARX#############"}, {"Luminor Bank", "RIKOLV2X", "LV##RIKO#############"},
		},
		director:    "Chairman of the Board",
		maleFirst:   f("Janis Andris Martins Edgars Raimonds Kristaps Arturs Ivars"),
		femaleFirst: f("Liga Ilze Kristine Anete Zane Inese Laura Elina"),
		maleLast:    f("Ozols Berzins Kalnins Liepins Krumins Zarins Vitols Klavins"),
		femaleLast:  f("Ozola Berzina Kalnina Liepina Krumina Zarina Vitola Klavina"),
	}, {
		name: "Estonia", form: "OÜ", fullName: "%s OÜ", weight: 15,
		cities:  f("Tallinn Tallinn Tartu Parnu Narva Rakvere"),
		streets: []string{"Parnu mnt", "Narva mnt", "Tartu mnt", "Liivalaia", "Endla", "Suur-Sojamae"},
		mobile:  "+372 5### ####", landline: "+372 6## ####", vat: "EE10#######",
		banks: []demoBank{
			{"Swedbank", "HABAEE2X", "EE##22##############"}, {"SEB Pank", "EEUHEE2X", "EE##10##############"},
			{"LHV Pank", "LHVBEE22", "EE##77##############"},
		},
		director:    "Member of the Board",
		maleFirst:   f("Kristjan Andres Marko Tarmo Rasmus Siim"),
		femaleFirst: f("Kadri Liis Maarja Triin Kertu Piret"),
		maleLast:    f("Tamm Saar Sepp Magi Kask Kukk Rebane Ilves"),
	}, {
		name: "Lithuania", form: "UAB", fullName: `UAB "%s"`, weight: 15,
		cities:  f("Vilnius Vilnius Kaunas Klaipeda Siauliai Panevezys"),
		streets: []string{"Gedimino pr.", "Konstitucijos pr.", "Savanoriu pr.", "Ukmerges g.", "Vilniaus g.", "Laisves al."},
		mobile:  "+370 6## #####", landline: "+370 5 ### ####", vat: "LT1########",
		banks: []demoBank{
			{"Swedbank", "HABALT22", "LT##73000###########"}, {"SEB bankas", "CBVILT2X", "LT##70440###########"},
			{"Luminor Bank", "AGBLLT2X", "LT##40100###########"},
		},
		director:    "Director",
		maleFirst:   f("Tomas Mantas Lukas Darius Andrius Paulius"),
		femaleFirst: f("Ieva Egle Ruta Agne Greta Laura"),
		maleLast:    f("Kazlauskas Petrauskas Jankauskas Stankevicius Vasiliauskas Zukauskas"),
		femaleLast:  f("Kazlauskiene Petrauskiene Jankauskiene Stankeviciene Vasiliauskiene Zukauskiene"),
	}, {
		name: "Sweden", form: "AB", fullName: "%s AB", weight: 10,
		cities:  f("Stockholm Stockholm Gothenburg Malmo Uppsala"),
		streets: f("Drottninggatan Kungsgatan Sveavagen Storgatan Vasagatan Hamngatan"),
		mobile:  "+46 70 ### ## ##", landline: "+46 8 ### ### ##", vat: "SE55########01",
		banks: []demoBank{
			{"SEB", "ESSESESS", "SE##5000################"}, {"Handelsbanken", "HANDSESS", "SE##6000################"},
			{"Nordea", "NDEASESS", "SE##3000################"},
		},
		director:    "CEO",
		maleFirst:   f("Erik Lars Johan Anders Karl Oskar"),
		femaleFirst: f("Anna Maria Sara Emma Karin Elin"),
		maleLast:    f("Andersson Johansson Karlsson Nilsson Lindqvist Berg Lindgren Holm"),
	}, {
		name: "Finland", form: "Oy", fullName: "%s Oy", weight: 10,
		cities:  f("Helsinki Helsinki Espoo Tampere Turku Oulu"),
		streets: f("Mannerheimintie Aleksanterinkatu Hameenkatu Kauppakatu Satamakatu"),
		mobile:  "+358 40 ### ####", landline: "+358 9 #### ###", vat: "FI2#######",
		banks: []demoBank{
			{"Nordea", "NDEAFIHH", "FI##1#############"}, {"OP", "OKOYFIHH", "FI##5#############"},
		},
		director:    "Managing Director",
		maleFirst:   f("Mikko Juha Antti Janne Ville Timo"),
		femaleFirst: f("Laura Anni Johanna Satu Hanna Emilia"),
		maleLast:    f("Virtanen Korhonen Nieminen Makinen Hamalainen Laine Heikkinen Koskinen"),
	}, {
		name: "Norway", form: "AS", fullName: "%s AS", weight: 8,
		cities:  f("Oslo Oslo Bergen Trondheim Stavanger"),
		streets: []string{"Karl Johans gate", "Storgata", "Kongens gate", "Dronningens gate", "Markveien"},
		mobile:  "+47 4## ## ###", landline: "+47 22 ## ## ##", vat: "NO9########MVA",
		banks: []demoBank{
			{"DNB", "DNBANOKK", "NO##12#########"}, {"Nordea", "NDEANOKK", "NO##60#########"},
		},
		director:    "Managing Director",
		maleFirst:   f("Ole Lars Magnus Henrik Jonas Sindre"),
		femaleFirst: f("Ingrid Ida Nora Silje Kari Marte"),
		maleLast:    f("Hansen Johansen Olsen Larsen Andersen Pedersen Berg Haugen"),
	}, {
		name: "Denmark", form: "ApS", fullName: "%s ApS", weight: 7,
		cities:  f("Copenhagen Copenhagen Aarhus Odense Aalborg"),
		streets: f("Vesterbrogade Norregade Osterbrogade Bredgade Vestergade"),
		mobile:  "+45 2# ## ## ##", landline: "+45 3# ## ## ##", vat: "DK3#######",
		banks: []demoBank{
			{"Danske Bank", "DABADKKK", "DK##3000##########"}, {"Nordea", "NDEADKKK", "DK##2000##########"},
		},
		director:    "CEO",
		maleFirst:   f("Soren Mads Rasmus Frederik Mikkel Anders"),
		femaleFirst: f("Mette Camilla Louise Sofie Line Pernille"),
		maleLast:    f("Jensen Nielsen Hansen Pedersen Christensen Rasmussen Sorensen Madsen"),
	}}
}

// demoCompanyWords are the first words of the legal entities' names.
func demoCompanyWords() []string {
	return strings.Fields(`Northwind Amber Daugava Hanseatic Nordic Gauja Kurzeme Lakeside Harbour Seaside
		Pinewood Birchwood Oakridge Granite Silverline Bluewave Northstar Polaris Aurora Fjord Lindgren
		Saule Venta Kalev Viking Copper Emerald Riverside Meridian Livonia Courland Helix Brightway
		Coastal Evergreen`)
}

type demoActivity struct {
	suffix, activity, industry, nace string
}

func demoActivities() []demoActivity {
	return []demoActivity{
		{"Trading", "Wholesale trade", "Trade", "46.90"},
		{"Logistics", "Freight transport by road", "Transport", "49.41"},
		{"Consulting", "Management consulting", "Professional services", "70.22"},
		{"Systems", "IT consulting", "IT", "62.02"},
		{"Software", "Software development", "IT", "62.01"},
		{"Foods", "Food production", "Manufacturing", "10.89"},
		{"Bakery", "Bakery products", "Manufacturing", "10.71"},
		{"Construction", "Construction of buildings", "Construction", "41.20"},
		{"Engineering", "Engineering services", "Professional services", "71.12"},
		{"Architects", "Architectural services", "Professional services", "71.11"},
		{"Design", "Interior design", "Creative industries", "74.10"},
		{"Media", "Advertising agency", "Creative industries", "73.11"},
		{"Print", "Printing", "Manufacturing", "18.12"},
		{"Pharma", "Pharmaceuticals", "Healthcare", "21.20"},
		{"Clinic", "Medical practice", "Healthcare", "86.21"},
		{"Dental", "Dental practice", "Healthcare", "86.23"},
		{"Legal", "Legal services", "Professional services", "69.10"},
		{"Accounting", "Accounting and audit", "Professional services", "69.20"},
		{"Energy", "Electricity trade", "Energy", "35.14"},
		{"Motors", "Car dealership", "Retail", "45.11"},
		{"Retail", "Retail trade", "Retail", "47.19"},
		{"Hotels", "Hotels", "Hospitality", "55.10"},
		{"Academy", "Education and training", "Education", "85.59"},
		{"Textiles", "Textile manufacturing", "Manufacturing", "13.92"},
		{"Properties", "Real estate management", "Real estate", "68.32"},
	}
}

func demoCampaigns() []string {
	return []string{"spring-office-sale", "back-to-office", "printer-fleet", "ergonomic-week", "paper-subscription"}
}

// demoCatalogue is the goods catalogue; the code's first three letters name its group.
func demoCatalogue() []demoGoods {
	return []demoGoods{
		{name: "Office chair ErgoPro 300", code: "FUR-001", unit: "pcs", price: 18900, maxQnt: 20, note: "Synchronous mechanism, adjustable armrests"},
		{name: "Height-adjustable desk 160x80", code: "FUR-002", unit: "pcs", price: 44900, maxQnt: 12, note: "Electric, two motors"},
		{name: "Meeting table for 8", code: "FUR-003", unit: "pcs", price: 54900, maxQnt: 2},
		{name: "Mobile pedestal, 3 drawers", code: "FUR-004", unit: "pcs", price: 12900, maxQnt: 12},
		{name: "Bookcase, 5 shelves", code: "FUR-005", unit: "pcs", price: 15900, maxQnt: 6},
		{name: "Visitor chair, stackable", code: "FUR-006", unit: "pcs", price: 5900, maxQnt: 24},
		{name: "Copy paper A4 80 g/m², 500 sheets", code: "PAP-001", unit: "ream", price: 490, maxQnt: 100},
		{name: "Copy paper A3 80 g/m², 500 sheets", code: "PAP-002", unit: "ream", price: 980, maxQnt: 30},
		{name: "Recycled paper A4, 500 sheets", code: "PAP-003", unit: "ream", price: 540, maxQnt: 60},
		{name: "Notebook A5, ruled", code: "PAP-004", unit: "pcs", price: 230, maxQnt: 50},
		{name: "Sticky notes 76x76, 12 pads", code: "PAP-005", unit: "pack", price: 690, maxQnt: 20},
		{name: "Envelopes C4, 250 pcs", code: "PAP-006", unit: "box", price: 1850, maxQnt: 10},
		{name: "Laser printer, monochrome", code: "PRN-001", unit: "pcs", price: 29900, maxQnt: 5},
		{name: "Colour multifunction printer", code: "PRN-002", unit: "pcs", price: 68900, maxQnt: 3},
		{name: "Toner cartridge, black", code: "PRN-003", unit: "pcs", price: 7900, maxQnt: 20},
		{name: "Toner cartridge set, colour", code: "PRN-004", unit: "set", price: 21900, maxQnt: 8},
		{name: "Label printer", code: "PRN-005", unit: "pcs", price: 11900, maxQnt: 4},
		{name: "Ballpoint pens, box of 50", code: "STA-001", unit: "box", price: 1250, maxQnt: 10},
		{name: "Lever arch files A4, 10 pcs", code: "STA-002", unit: "pack", price: 2400, maxQnt: 10},
		{name: "Whiteboard 120x90", code: "STA-003", unit: "pcs", price: 8900, maxQnt: 4},
		{name: "Delivery and assembly", code: "SRV-001", unit: "hour", price: 4500, maxQnt: 8},
		{name: "Printer maintenance visit", code: "SRV-002", unit: "visit", price: 6500, maxQnt: 6},
		{name: "Workplace design consultation", code: "SRV-003", unit: "hour", price: 7500, maxQnt: 10},
		{name: "Monthly supply subscription", code: "SRV-004", unit: "month", price: 14900, maxQnt: 12, note: "Paper, toner and stationery on a monthly schedule"},
		{name: "Old furniture removal", code: "SRV-005", unit: "service", price: 12000, maxQnt: 2},
	}
}

func demoDealThemes() []demoDealTheme {
	return []demoDealTheme{
		{"Office chairs for the new office", []string{"FUR"}},
		{"Open-space desks", []string{"FUR"}},
		{"Meeting room furnishing", []string{"FUR", "STA"}},
		{"Annual paper supply", []string{"PAP"}},
		{"Stationery framework agreement", []string{"PAP", "STA"}},
		{"Printer fleet renewal", []string{"PRN"}},
		{"Toner supply contract", []string{"PRN"}},
		{"Office relocation support", []string{"SRV", "FUR"}},
		{"Printer maintenance contract", []string{"SRV", "PRN"}},
		{"Reception area refurbishment", []string{"FUR", "STA", "SRV"}},
	}
}

func demoTaskNotes(kind string) []string {
	return map[string][]string{
		"Call":            {"Call to confirm the delivery date", "Call about the offer", "Follow-up call after the demo", "Call the accountant about the unpaid invoice"},
		"Meeting":         {"Meeting: present the new furniture catalogue", "Meeting at the client's office", "Quarterly review meeting"},
		"E-mail":          {"Send the updated offer", "Send the price list", "E-mail the contract draft"},
		"Follow-up":       {"Check whether the invoice was paid", "Ask for feedback on the delivery", "Remind about the expiring offer"},
		"Demo":            {"Show the height-adjustable desks in the showroom", "Demo of the printer fleet service"},
		"Contract review": {"Review the contract terms with the lawyer", "Prepare the framework agreement"},
	}[kind]
}

func demoExpenseNotes(category string) []string {
	return map[string][]string{
		"Purchases": {"Purchase of goods from the supplier", "Furniture for stock", "Paper and toner for stock"},
		"Rent":      {"Office and showroom rent", "Warehouse rent"},
		"Salaries":  {"Salaries", "Sales bonuses"},
		"Marketing": {"Google Ads campaign", "Trade fair stand", "Printed catalogues"},
		"Taxes":     {"VAT payment", "Social security contributions"},
		"Software":  {"CRM subscription", "Accounting software", "Cloud storage"},
	}[category]
}

func demoMailTemplates() []demoMailTemplate {
	sign := []string{"Best regards,", "{user}"}
	regards := []string{"Kind regards,", "{name}"}
	with := func(paras []string, tail []string) []string { return append(slices.Clone(paras), tail...) }
	return []demoMailTemplate{
		{folder: 2, needs: "deal", subject: "Offer: {deal}", attachment: true, paras: with([]string{"{hello}",
			"Please find attached our offer for {deal}. The prices include VAT and are valid for 30 days.",
			"I will be glad to answer any questions."}, sign)},
		{folder: 2, needs: "invoice", subject: "Invoice {invoice}", attachment: true, paras: with([]string{"{hello}",
			"Please find attached invoice {invoice}. Payment is due within 14 days.", "Thank you for your order!"}, sign)},
		{folder: 2, subject: "Delivery schedule", paras: with([]string{"{hello}",
			"We plan to deliver your order on {weekday} between 9:00 and 12:00. Please let us know if that suits you."}, sign)},
		{folder: 2, subject: "Meeting follow-up", paras: with([]string{"{hello}",
			"Thank you for the meeting today. As agreed, I will send the updated price list by the end of the week."}, sign)},
		{folder: 2, subject: "New catalogue of ergonomic furniture", paras: with([]string{"{hello}",
			"Our new catalogue of ergonomic chairs and height-adjustable desks is out. Would you like a short demo in our showroom in Riga?"}, sign)},
		{folder: 1, needs: "deal", subject: "Re: Offer: {deal}", paras: with([]string{"Hello {userFirst},",
			"Thank you for the offer. Could you check whether a discount is possible if we order before the end of the month?"}, regards)},
		{folder: 1, needs: "invoice", subject: "Question about invoice {invoice}", paras: with([]string{"Hello {userFirst},",
			"We have received invoice {invoice}. Could you please also send a copy to our accounting e-mail?"}, regards)},
		{folder: 1, subject: "Order confirmation", paras: with([]string{"Hello {userFirst},",
			"We confirm the order as discussed. Please deliver to our office at {address}."}, regards)},
		{folder: 1, subject: "Printer shows a paper jam error", paras: with([]string{"Hello,",
			"Our printer shows a paper jam error again. Could your technician come this week?"}, regards)},
		{folder: 1, subject: "Request for a price list", paras: with([]string{"Hello,",
			"Could you send us your current price list for copy paper and toner cartridges?"}, regards)},
	}
}

type demoKPIMetric struct {
	metric, name   string
	min, max, step int // range of monthly plan values
}

func demoKPIMetrics() []demoKPIMetric {
	return []demoKPIMetric{
		{"companies_added", "New counterparties", 4, 10, 1},
		{"tasks_done", "Tasks done", 10, 30, 5},
		{"deals_created", "New deals", 3, 7, 1},
		{"deal_sum", "Deal volume", 5000, 15000, 500},
		{"invoices_issued", "Invoices issued", 3, 8, 1},
		{"invoice_sum", "Invoiced amount", 4000, 12000, 500},
		{"income", "Income", 8000, 24000, 1000},
	}
}
