export type Language = 'en' | 'de' | 'fr' | 'es' | 'it';

export interface Strings {
  vote: string;
  votes: (n: number) => string;
  voted: string;
  enter: string;
  entered: string;
  lineup: string;
  learnMore: string;
  addToCart: string;
  remove: string;
  cart: (n: number) => string;
  checkout: string;
  placeOrder: string;
  cancel: string;
  thanks: string;
  close: string;
  sponsoredBy: string;
  poll: string;
  contest: string;
  closesIn: (time: string) => string;
  pollClosed: string;
  contestClosed: string;
  youVoted: string;
  now: string;
  failed: string;
  shop: string;
}

const STRINGS: Record<Language, Strings> = {
  en: {
    vote: 'Vote', votes: (n) => `${n} ${n === 1 ? 'vote' : 'votes'}`, voted: 'Thanks for voting', enter: 'Enter', entered: "You're in!",
    lineup: 'Coming up', learnMore: 'Learn more', addToCart: 'Add to cart', remove: 'Remove', cart: (n) => `Cart (${n})`,
    checkout: 'Checkout', placeOrder: 'Place order', cancel: 'Cancel', thanks: 'Thank you for your order', close: 'Close', sponsoredBy: 'Sponsored',
    poll: 'Poll', contest: 'Contest', closesIn: (t) => `Closes in ${t}`, pollClosed: 'Voting has closed', contestClosed: 'Entries have closed', youVoted: 'Your vote', now: 'Now', failed: 'That did not go through. Please try again.', shop: 'Shop',
  },
  de: {
    vote: 'Abstimmen', votes: (n) => `${n} ${n === 1 ? 'Stimme' : 'Stimmen'}`, voted: 'Danke für deine Stimme', enter: 'Teilnehmen', entered: 'Du bist dabei!',
    lineup: 'Als Nächstes', learnMore: 'Mehr erfahren', addToCart: 'In den Warenkorb', remove: 'Entfernen', cart: (n) => `Warenkorb (${n})`,
    checkout: 'Zur Kasse', placeOrder: 'Bestellen', cancel: 'Abbrechen', thanks: 'Danke für deine Bestellung', close: 'Schließen', sponsoredBy: 'Gesponsert',
    poll: 'Umfrage', contest: 'Gewinnspiel', closesIn: (t) => `Endet in ${t}`, pollClosed: 'Die Abstimmung ist beendet', contestClosed: 'Die Teilnahme ist beendet', youVoted: 'Deine Stimme', now: 'Jetzt', failed: 'Das hat nicht geklappt. Bitte versuch es noch einmal.', shop: 'Shop',
  },
  fr: {
    vote: 'Voter', votes: (n) => `${n} vote${n === 1 ? '' : 's'}`, voted: 'Merci pour votre vote', enter: 'Participer', entered: 'Vous participez !',
    lineup: 'À suivre', learnMore: 'En savoir plus', addToCart: 'Ajouter au panier', remove: 'Retirer', cart: (n) => `Panier (${n})`,
    checkout: 'Commander', placeOrder: 'Valider la commande', cancel: 'Annuler', thanks: 'Merci pour votre commande', close: 'Fermer', sponsoredBy: 'Sponsorisé',
    poll: 'Sondage', contest: 'Concours', closesIn: (t) => `Fin dans ${t}`, pollClosed: 'Le vote est clos', contestClosed: 'Les participations sont closes', youVoted: 'Votre vote', now: 'En cours', failed: 'Cela n’a pas abouti. Veuillez réessayer.', shop: 'Boutique',
  },
  es: {
    vote: 'Votar', votes: (n) => `${n} voto${n === 1 ? '' : 's'}`, voted: 'Gracias por votar', enter: 'Participar', entered: '¡Ya participas!',
    lineup: 'A continuación', learnMore: 'Más información', addToCart: 'Añadir al carrito', remove: 'Quitar', cart: (n) => `Carrito (${n})`,
    checkout: 'Pagar', placeOrder: 'Realizar pedido', cancel: 'Cancelar', thanks: 'Gracias por tu pedido', close: 'Cerrar', sponsoredBy: 'Patrocinado',
    poll: 'Encuesta', contest: 'Concurso', closesIn: (t) => `Cierra en ${t}`, pollClosed: 'La votación ha terminado', contestClosed: 'La participación ha terminado', youVoted: 'Tu voto', now: 'Ahora', failed: 'No se ha podido enviar. Inténtalo de nuevo.', shop: 'Tienda',
  },
  it: {
    vote: 'Vota', votes: (n) => `${n} vot${n === 1 ? 'o' : 'i'}`, voted: 'Grazie per il voto', enter: 'Partecipa', entered: 'Sei dentro!',
    lineup: 'Prossimamente', learnMore: 'Scopri di più', addToCart: 'Aggiungi al carrello', remove: 'Rimuovi', cart: (n) => `Carrello (${n})`,
    checkout: 'Cassa', placeOrder: 'Conferma ordine', cancel: 'Annulla', thanks: "Grazie per l'ordine", close: 'Chiudi', sponsoredBy: 'Sponsorizzato',
    poll: 'Sondaggio', contest: 'Concorso', closesIn: (t) => `Chiude tra ${t}`, pollClosed: 'La votazione è chiusa', contestClosed: 'Le iscrizioni sono chiuse', youVoted: 'Il tuo voto', now: 'Ora', failed: 'Non è andato a buon fine. Riprova.', shop: 'Negozio',
  },
};

/** Strings for a language code such as `de` or `de-AT`; English when unknown. */
export function stringsFor(language: string | undefined): Strings {
  const base = (language ?? 'en').slice(0, 2).toLowerCase() as Language;
  return STRINGS[base] ?? STRINGS.en;
}
