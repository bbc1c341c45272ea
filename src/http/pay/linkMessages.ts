// Messages of the refund claim page and the payment link pages (product §25), in the payer's page's four languages.
import type { Language } from "./messages.ts";

const en = {
  claimNetwork: "Network",
  claimControl: "Give an address you control on the {network} network: one of a wallet whose keys you hold.",
  claimAddressRequired: "Enter your address.",
  claimTryLater: "The refund cannot be claimed right now. Try again in a few minutes.",
  claimProblem: "The refund could not be claimed: {detail}",
  claimTitle: "Refund",
  claimFrom: "{merchant} refunds you",
  claimYouReceive: "You receive",
  claimAddress: "Your {currency} address on the {network} network",
  claimSubmit: "Claim the refund",
  claimBefore: "Claim it before {date}.",
  claimWarning: "Check the address: money sent to a wrong address cannot be recovered.",
  claimClaimed: "This refund was claimed. It is being sent to {address}.",
  claimCompleted: "This refund was sent to {address}.",
  claimExpired: "This refund link expired. The amount went back to the merchant; contact them.",
  claimNotFound: "There is no refund at this link. Check the link you were given.",
  claimInvalidAddress: "This is not a valid address for this refund.",
  claimScreened: "This address cannot receive the refund: it is on a screening (sanctions) list.",
  linkTitle: "Payment",
  linkPay: "Pay {merchant}",
  linkAmount: "Amount in {currency}",
  linkBounds: "Between {min} and {max} {currency}.",
  linkContinue: "Continue to payment",
  linkInactive: "This payment link is no longer active.",
  linkInactiveText: "Ask the merchant for a new link.",
  linkNotFound: "There is no payment at this link. Check the link you were given.",
  linkAmountInvalid: "Enter an amount between {min} and {max} {currency}.",
};

type Key = keyof typeof en;

const fr: Record<Key, string> = {
  claimNetwork: "Réseau",
  claimControl:
    "Indiquez une adresse que vous contrôlez sur le réseau {network} : celle d’un portefeuille dont vous détenez les clés.",
  claimAddressRequired: "Saisissez votre adresse.",
  claimTryLater: "Le remboursement ne peut pas être réclamé pour l’instant. Réessayez dans quelques minutes.",
  claimProblem: "Le remboursement n’a pas pu être réclamé : {detail}",
  claimTitle: "Remboursement",
  claimFrom: "{merchant} vous rembourse",
  claimYouReceive: "Vous recevez",
  claimAddress: "Votre adresse {currency} sur le réseau {network}",
  claimSubmit: "Réclamer le remboursement",
  claimBefore: "Réclamez-le avant le {date}.",
  claimWarning: "Vérifiez l’adresse : un envoi à une mauvaise adresse est perdu.",
  claimClaimed: "Ce remboursement a été réclamé. Il est en cours d’envoi à {address}.",
  claimCompleted: "Ce remboursement a été envoyé à {address}.",
  claimExpired: "Ce lien de remboursement a expiré. Le montant est retourné au marchand ; contactez-le.",
  claimNotFound: "Aucun remboursement à ce lien. Vérifiez le lien reçu.",
  claimInvalidAddress: "Cette adresse n’est pas valide pour ce remboursement.",
  claimScreened: "Cette adresse ne peut pas recevoir le remboursement : elle figure sur une liste de sanctions.",
  linkTitle: "Paiement",
  linkPay: "Payer {merchant}",
  linkAmount: "Montant en {currency}",
  linkBounds: "Entre {min} et {max} {currency}.",
  linkContinue: "Continuer vers le paiement",
  linkInactive: "Ce lien de paiement n’est plus actif.",
  linkInactiveText: "Demandez un nouveau lien au marchand.",
  linkNotFound: "Aucun paiement à ce lien. Vérifiez le lien reçu.",
  linkAmountInvalid: "Saisissez un montant entre {min} et {max} {currency}.",
};

const es: Record<Key, string> = {
  claimNetwork: "Red",
  claimControl: "Indique una dirección que usted controle en la red {network}: la de una cartera cuyas claves tenga.",
  claimAddressRequired: "Introduzca su dirección.",
  claimTryLater: "El reembolso no se puede reclamar ahora. Vuelva a intentarlo en unos minutos.",
  claimProblem: "No se pudo reclamar el reembolso: {detail}",
  claimTitle: "Reembolso",
  claimFrom: "{merchant} le reembolsa",
  claimYouReceive: "Usted recibe",
  claimAddress: "Su dirección {currency} en la red {network}",
  claimSubmit: "Reclamar el reembolso",
  claimBefore: "Reclámelo antes del {date}.",
  claimWarning: "Compruebe la dirección: un envío a una dirección errónea se pierde.",
  claimClaimed: "Este reembolso fue reclamado. Se está enviando a {address}.",
  claimCompleted: "Este reembolso se envió a {address}.",
  claimExpired: "Este enlace de reembolso caducó. El importe volvió al comercio; contáctelo.",
  claimNotFound: "No hay ningún reembolso en este enlace. Compruebe el enlace recibido.",
  claimInvalidAddress: "Esta dirección no es válida para este reembolso.",
  claimScreened: "Esta dirección no puede recibir el reembolso: figura en una lista de sanciones.",
  linkTitle: "Pago",
  linkPay: "Pagar a {merchant}",
  linkAmount: "Importe en {currency}",
  linkBounds: "Entre {min} y {max} {currency}.",
  linkContinue: "Continuar al pago",
  linkInactive: "Este enlace de pago ya no está activo.",
  linkInactiveText: "Pida un enlace nuevo al comercio.",
  linkNotFound: "No hay ningún pago en este enlace. Compruebe el enlace recibido.",
  linkAmountInvalid: "Introduzca un importe entre {min} y {max} {currency}.",
};

const de: Record<Key, string> = {
  claimNetwork: "Netzwerk",
  claimControl:
    "Geben Sie eine Adresse an, die Sie im Netzwerk {network} kontrollieren: die einer Wallet, deren Schlüssel Sie besitzen.",
  claimAddressRequired: "Geben Sie Ihre Adresse ein.",
  claimTryLater: "Die Erstattung kann gerade nicht angefordert werden. Versuchen Sie es in einigen Minuten erneut.",
  claimProblem: "Die Erstattung konnte nicht angefordert werden: {detail}",
  claimTitle: "Erstattung",
  claimFrom: "{merchant} erstattet Ihnen",
  claimYouReceive: "Sie erhalten",
  claimAddress: "Ihre {currency}-Adresse im Netzwerk {network}",
  claimSubmit: "Erstattung anfordern",
  claimBefore: "Fordern Sie sie vor dem {date} an.",
  claimWarning: "Prüfen Sie die Adresse: an eine falsche Adresse gesendetes Geld ist verloren.",
  claimClaimed: "Diese Erstattung wurde angefordert. Sie wird an {address} gesendet.",
  claimCompleted: "Diese Erstattung wurde an {address} gesendet.",
  claimExpired: "Dieser Erstattungslink ist abgelaufen. Der Betrag ging an den Händler zurück; wenden Sie sich an ihn.",
  claimNotFound: "Unter diesem Link gibt es keine Erstattung. Prüfen Sie den erhaltenen Link.",
  claimInvalidAddress: "Diese Adresse ist für diese Erstattung ungültig.",
  claimScreened: "Diese Adresse kann die Erstattung nicht erhalten: Sie steht auf einer Sanktionsliste.",
  linkTitle: "Zahlung",
  linkPay: "An {merchant} zahlen",
  linkAmount: "Betrag in {currency}",
  linkBounds: "Zwischen {min} und {max} {currency}.",
  linkContinue: "Weiter zur Zahlung",
  linkInactive: "Dieser Zahlungslink ist nicht mehr aktiv.",
  linkInactiveText: "Bitten Sie den Händler um einen neuen Link.",
  linkNotFound: "Unter diesem Link gibt es keine Zahlung. Prüfen Sie den erhaltenen Link.",
  linkAmountInvalid: "Geben Sie einen Betrag zwischen {min} und {max} {currency} ein.",
};

const CATALOGS: Readonly<Record<Language, Record<Key, string>>> = { en, fr, es, de };

export type LinkMessageKey = Key;

/** A message with its `{name}` placeholders filled (plain text; the caller escapes the result). */
export function linkMessage(lang: Language, key: Key, values: Record<string, string> = {}): string {
  return CATALOGS[lang][key].replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
